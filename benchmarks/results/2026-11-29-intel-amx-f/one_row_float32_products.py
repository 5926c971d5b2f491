import time, torch, statistics
torch.set_num_threads(2)
for (o, i) in [(768, 256), (256, 256), (1024, 256), (256, 1024), (1536, 512), (512, 512)]:
    w = torch.randn(o, i) * 0.05; b = torch.randn(o) * 0.05; x = torch.randn(1, i)
    wt = w.t()
    f = {"linear": lambda: torch.nn.functional.linear(x, w, b), "addmm": lambda: torch.addmm(b, x, wt),
         "addmv": lambda: torch.addmv(b, w, x[0]), "mv+add": lambda: torch.mv(w, x[0]) + b}
    a = f["linear"](); eq = {k: torch.equal(a.view(-1), g().view(-1)) for k, g in f.items()}
    t = {k: [] for k in f}
    for r in range(500):
        for k, g in f.items():
            s = time.perf_counter(); g(); t[k].append(time.perf_counter() - s)
    print(o, i, {k: f"{statistics.median(v)*1e6:.1f}us{'' if eq[k] else '(!=)'}" for k, v in t.items()})
torch.set_num_threads(1)
print("1 thread")
for (o, i) in [(768, 256), (1024, 256), (256, 1024)]:
    w = torch.randn(o, i) * 0.05; b = torch.randn(o) * 0.05; x = torch.randn(1, i)
    f = {"linear": lambda: torch.nn.functional.linear(x, w, b), "addmv": lambda: torch.addmv(b, w, x[0])}
    t = {k: [] for k in f}
    for r in range(500):
        for k, g in f.items():
            s = time.perf_counter(); g(); t[k].append(time.perf_counter() - s)
    print(o, i, {k: f"{statistics.median(v)*1e6:.1f}us" for k, v in t.items()})
