import torch, time
torch.set_num_threads(2)
def bench(f, n=50):
    for _ in range(3): f()
    t = time.perf_counter()
    for _ in range(n): f()
    return (time.perf_counter() - t) / n * 1e3
V, d = 32000, 512
w = torch.randn(V, d) * 0.05
p32 = torch.ops.mkldnn._reorder_linear_weight(w, None)
q = torch.randint(-127, 127, (V, d), dtype=torch.int8)
qt = q.t()
s = torch.rand(V)
for rows in (1, 2, 4, 8, 16, 32, 64):
    x = torch.randn(rows, d)
    f32 = bench(lambda: torch.ops.mkldnn._linear_pointwise(x, p32, None, "none", [], ""))
    def quant():
        t = x.abs().amax(-1, keepdim=True) / 127
        return torch.round(x / t).to(torch.int8), t
    xq, t = quant()
    tq = bench(quant)
    im = bench(lambda: torch._int_mm(xq, qt)) if rows > 16 else float("nan")
    try:
        im = bench(lambda: torch._int_mm(xq, qt))
    except Exception as e:
        print(e)
    acc = torch._int_mm(xq, qt)
    ts = bench(lambda: acc.float().mul_(s).mul_(t))
    ap = acc.float()
    am = bench(lambda: ap.view(rows, -1, 64).amax(-1))
    print(f"rows {rows}: fp32 {f32:.3f}  quant {tq:.3f}  int_mm {im:.3f}  scale {ts:.3f}  blockmax {am:.3f}")
