import statistics, time, torch
torch.set_num_threads(2)
bf = torch.bfloat16
lp = torch.ops.mkldnn._linear_pointwise
shapes = []
for l in range(6):
    shapes += [(1536, 512), (512, 512), (512, 512), (512, 512), (2048, 512), (512, 2048)]
shapes += [(32000, 512)]
ws = [torch.randn(o, i) * 0.05 for o, i in shapes]
pk = [torch.ops.mkldnn._reorder_linear_weight(w.to(bf), None) for w in ws]
raw = [w.to(bf) for w in ws]
q = [torch.ops.quantized.linear_prepack(torch.quantize_per_tensor(w, 0.01, 0, torch.qint8), None) for w in ws]
total = sum(w.numel() for w in ws)
big = torch.randn(total).to(bf)
for rows in (1, 4, 8):
    xs = {i: torch.randn(rows, i) for i in (512, 2048)}
    x16 = {k: v.to(bf) for k, v in xs.items()}
    v = {
      "bf16_packed": lambda: [lp(x16[w.shape[1] if False else s[1]], p, None, "none", [], "") for s, p in zip(shapes, pk)],
      "bf16_plain": lambda: [torch.nn.functional.linear(x16[s[1]], r) for s, r in zip(shapes, raw)],
      "fp32": lambda: [torch.nn.functional.linear(xs[s[1]], w) for s, w in zip(shapes, ws)],
      "int8dyn": lambda: [torch.ops.quantized.linear_dynamic(xs[s[1]], p) for s, p in zip(shapes, q)],
      "read_bf16": lambda: big.sum(),
    }
    t = {k: [] for k in v}
    for r in range(15):
        for k, f in v.items():
            s = time.perf_counter(); f(); t[k].append(time.perf_counter() - s)
    print(rows, " ".join(f"{k} {statistics.median(x)*1e3:.2f}ms" for k, x in t.items()), f"bytes bf16 {total*2/1e6:.0f}MB")
