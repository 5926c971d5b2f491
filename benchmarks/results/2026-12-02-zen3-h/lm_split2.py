import torch, time, warnings, sys
warnings.simplefilter("ignore")
torch.set_num_threads(1)
torch.manual_seed(0)
V, D = int(sys.argv[1]), int(sys.argv[2])
w = torch.randn(V, D) * 0.05
def pack(wb):
    n = len(wb)
    qw = torch.quantize_per_channel(wb, wb.abs().amax(1) / 127, torch.zeros(n, dtype=torch.long), 0, torch.qint8)
    return torch.ops.quantized.linear_prepack(qw, None)
full = pack(w)
op = torch.ops.quantized.linear_dynamic
splits = {p: [pack(c) for c in w.chunk(p)] for p in (4, 8, 16)}
for rows in (8, 16, 32, 64, 128):
    x = torch.randn(rows, D)
    fs = {"full": lambda: op(x, full, True)}
    for p, ps in splits.items():
        fs[f"split{p}"] = (lambda ps=ps: [op(x, q, True) for q in ps])
    ts = {k: [] for k in fs}
    for r in range(15):
        for k, f in fs.items():
            t = time.perf_counter(); f(); ts[k].append(time.perf_counter() - t)
    base = sorted(ts["full"])[7]
    print(rows, " ".join("%s %.2f ms (%.2fx)" % (k, 1e3 * sorted(v)[7], base / sorted(v)[7]) for k, v in ts.items()))
