import torch, time, warnings
warnings.simplefilter("ignore")
torch.set_num_threads(1)
def t(f, n=3000):
    for _ in range(50): f()
    t0 = time.perf_counter()
    for _ in range(n): f()
    return (time.perf_counter() - t0) / n * 1e6
for (k, n) in ((256, 768), (256, 256), (256, 1024), (1024, 256), (256, 16384)):
    W = torch.randn(n, k) * 0.05; bias = torch.zeros(n)
    pf = torch.ops.mkldnn._reorder_linear_weight(W, None)
    Wb = W.bfloat16(); pb = torch.ops.mkldnn._reorder_linear_weight(Wb, None); bb = bias.bfloat16()
    mk = torch.ops.mkl._mkl_reorder_linear_weight(W, 64)
    out = []
    for rows in (1, 2, 4, 8, 16):
        x = torch.randn(rows, k); xb = x.bfloat16()
        a = t(lambda: torch.ops.mkldnn._linear_pointwise(xb, pb, bb, "none", [], ""))
        a2 = t(lambda: torch.ops.mkldnn._linear_pointwise(x.bfloat16(), pb, bb, "none", [], "").float())
        b = t(lambda: torch.ops.mkldnn._linear_pointwise(x, pf, bias, "none", [], ""))
        c = t(lambda: torch.nn.functional.linear(x, W, bias))
        d = t(lambda: torch.ops.mkl._mkl_linear(x, mk, W, bias, rows))
        out.append(f"r{rows}: bf16 {a:.0f} (+casts {a2:.0f}) f32dnn {b:.0f} mkl {c:.0f} mklpk {d:.0f}")
    print((k, n), " | ".join(out))
