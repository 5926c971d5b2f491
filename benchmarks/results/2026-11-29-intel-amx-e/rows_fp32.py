import statistics, time, torch
torch.set_num_threads(2)
bf = torch.bfloat16
lp = torch.ops.mkldnn._linear_pointwise
for (o, i) in [(256, 256), (768, 256), (1024, 256), (256, 1024), (512, 512), (1536, 512), (2048, 512)]:
    n = max(2, 24_000_000 // (o * i * 4))   # cycle ~24 MB of fp32 weights: L2 and beyond
    ws = [torch.randn(o, i) * 0.05 for _ in range(n)]; b = torch.randn(o) * 0.05
    pk = [torch.ops.mkldnn._reorder_linear_weight(w.to(bf), None) for w in ws]; b16 = b.to(bf)
    line = []
    for rows in (1, 4, 9, 16, 32, 64):
        x = torch.randn(rows, i)
        v = {"bf16": lambda k: lp(x.to(bf), pk[k], b16, "none", [], "").float(), "fp32": lambda k: torch.nn.functional.linear(x, ws[k], b)}
        t = {k: [] for k in v}
        for r in range(max(8, 200 // n)):
            for name, f in v.items():
                s = time.perf_counter()
                for k in range(n): f(k)
                t[name].append((time.perf_counter() - s) / n)
        line.append(f"{rows}:{statistics.median(t['bf16'])*1e6:.0f}/{statistics.median(t['fp32'])*1e6:.0f}")
    print(f"{o}x{i} ({n} weights) bf16+casts/fp32 us by rows: " + " ".join(line))
