import torch, time
import sys
if "heap" in sys.argv:
    from zhen import hardware; print("heap", hardware.keep_freed_memory(large_blocks=True))
torch.manual_seed(0)
def t(f, n=5):
    f(); f()
    best = 1e9
    for _ in range(n):
        s = time.perf_counter(); f(); best = min(best, time.perf_counter() - s)
    return best
R, V, D = 2048, 32000, 512
h = torch.randn(R, D, dtype=torch.bfloat16)
w = torch.randn(V, D, dtype=torch.bfloat16)
wt = w.t().contiguous()
g = torch.randn(R, V, dtype=torch.bfloat16)
gt = g.t().contiguous()
a = torch.randn(2048, 2048, dtype=torch.bfloat16)
fl = 2 * R * V * D
for name, f in [
    ("square 2048^3", lambda: a @ a),
    ("logits h @ w.T", lambda: h @ w.t()),
    ("logits h @ wt(contig)", lambda: h @ wt),
    ("logitsT w @ h.T", lambda: w @ h.t()),
    ("grad_h g @ w", lambda: g @ w),
    ("grad_h gt.T @ w", lambda: gt.t() @ w),
    ("grad_w g.T @ h", lambda: g.t() @ h),
    ("grad_w gt @ h", lambda: gt @ h),
    ("logits vocab slices 4x8000", lambda: [h @ w[i:i+8000].t() for i in range(0, V, 8000)]),
    ("logits h @ w.T out=", lambda: torch.mm(h, w.t(), out=g)),
]:
    s = t(f)
    fl_ = 2 * 2048**3 if name.startswith("square") else fl
    print(f"{name:32s} {s*1e3:8.1f} ms  {fl_/s/1e9:7.0f} GFLOP/s")
