import statistics, time, torch
torch.set_num_threads(2)
bf = torch.bfloat16
lp = torch.ops.mkldnn._linear_pointwise
for (o, i) in [(768, 256), (256, 256), (1024, 256), (256, 1024), (1536, 512), (2048, 512), (512, 2048)]:
    w = torch.randn(o, i) * 0.05; b = torch.randn(o) * 0.05
    pk = torch.ops.mkldnn._reorder_linear_weight(w.to(bf), None); b16 = b.to(bf)
    line = []
    for rows in (1, 4, 11, 20, 32, 64):
        x = torch.randn(rows, i)
        v = {"bf16": lambda: lp(x.to(bf), pk, b16, "none", [], "").float(), "fp32": lambda: torch.nn.functional.linear(x, w, b)}
        t = {k: [] for k in v}
        for r in range(200):
            for name, f in v.items():
                s = time.perf_counter(); f(); t[name].append(time.perf_counter() - s)
        line.append(f"{rows}:{statistics.median(t['bf16'])*1e6:.0f}/{statistics.median(t['fp32'])*1e6:.0f}")
    print(f"{o}x{i} bf16+casts/fp32 us (hot) by rows: " + " ".join(line))
