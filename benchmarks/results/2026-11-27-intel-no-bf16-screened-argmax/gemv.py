import torch, time
torch.set_num_threads(2)
def bench(f, n=50):
    for _ in range(5): f()
    t = time.perf_counter()
    for _ in range(n): f()
    return (time.perf_counter() - t) / n * 1e3
for (o, i) in [(32000, 512), (2048, 512), (512, 2048), (1536, 512)]:
    w = torch.randn(o, i) * 0.05
    b = torch.zeros(o)
    p32 = torch.ops.mkldnn._reorder_linear_weight(w, None)
    w16 = w.to(torch.bfloat16); b16 = b.to(torch.bfloat16)
    p16 = torch.ops.mkldnn._reorder_linear_weight(w16, None)
    wh = w.to(torch.float16)
    for rows in (1, 4, 8, 16, 64):
        x = torch.randn(rows, i); x16 = x.to(torch.bfloat16)
        f32 = bench(lambda: torch.ops.mkldnn._linear_pointwise(x, p32, b, "none", [], ""))
        f16 = bench(lambda: torch.ops.mkldnn._linear_pointwise(x16, p16, b16, "none", [], ""))
        plain16 = bench(lambda: torch.nn.functional.linear(x16, w16, b16))
        try:
            fh = bench(lambda: torch.nn.functional.linear(x.half(), wh))
        except Exception as e:
            fh = float('nan')
        print(f"{o}x{i} rows {rows}: fp32 packed {f32:.3f} ms  bf16 packed {f16:.3f}  bf16 plain {plain16:.3f}  fp16 plain {fh:.3f}")
