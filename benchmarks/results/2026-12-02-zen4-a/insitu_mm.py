"""Inside tiny bf16 training steps: each product of the fused loss timed (x @ w_t, probs @ w, x.T @ probs), and the
same products on the same operands again right after the step (warm, nothing else alive)."""
import sys, time, statistics, warnings
sys.path.insert(0, "benchmarks")
warnings.simplefilter("ignore")
import torch
torch.set_num_threads(2)
from bench_train import build_step, make_batches
import zhen.fast_training as ft
inner = ft.LinearCrossEntropy.forward
orig = torch.Tensor.__matmul__
log = []
saved = []
def mm(a, b):
    s = time.perf_counter(); r = orig(a, b); log.append((tuple(a.shape), tuple(b.shape), time.perf_counter() - s))
    if len(saved) < 3: saved.append((a, b))
    return r
def timed(ctx, *a):
    torch.Tensor.__matmul__ = mm
    try:
        return inner(ctx, *a)
    finally:
        torch.Tensor.__matmul__ = orig
ft.LinearCrossEntropy.forward = staticmethod(timed)
chunk = int(sys.argv[1]) if len(sys.argv) > 1 else 2048
step = build_step("zhen-prenorm-bf16", "tiny", "fused", chunk)
batches = make_batches("tiny", 4096, 8)
for b in batches[:2]: step(b)
for b in batches[2:]:
    log.clear(); saved.clear()
    step(b)
    insitu = [(sa, sb, t) for sa, sb, t in log[:3]]
    again = []
    for a, bb in saved:
        orig(a, bb)
        s = time.perf_counter(); orig(a, bb); again.append(time.perf_counter() - s)
    print("  ".join(f"{sa}@{sb}: {1e3*t:.0f} ms in step, {1e3*t2:.0f} after" for (sa, sb, t), t2 in zip(insitu, again)))
