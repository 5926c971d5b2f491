import statistics, time, torch
torch.set_num_threads(2)
bf = torch.bfloat16
lp = torch.ops.mkldnn._linear_pointwise
for (o, i) in [(256, 256), (768, 256), (1024, 256), (256, 1024), (16000, 256), (512, 512), (1536, 512)]:
    w = torch.randn(o, i) * 0.05; b = torch.randn(o) * 0.05
    w16, b16 = w.to(bf), b.to(bf)
    pk = torch.ops.mkldnn._reorder_linear_weight(w16, None)
    for rows in (1, 4):
        x = torch.randn(rows, i); x16 = x.to(bf); xt16 = x16.t().contiguous()
        v = {"lp packed": lambda: lp(x16, pk, b16, "none", [], ""),
             "F.linear bf16": lambda: torch.nn.functional.linear(x16, w16, b16),
             "addmm wf bf16": lambda: torch.addmm(b16[:, None], w16, xt16),
             "F.linear fp32": lambda: torch.nn.functional.linear(x, w, b)}
        t = {k: [] for k in v}
        for r in range(5):
            for k, f in v.items():
                for _ in range(20): f()
                s = time.perf_counter()
                for _ in range(200): f()
                t[k].append((time.perf_counter() - s) / 200)
        print(f"{o}x{i} rows {rows}: " + "  ".join(f"{k} {statistics.median(ts)*1e6:.1f}" for k, ts in t.items()) + " us")
