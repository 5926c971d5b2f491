"""A base bf16 training step's weight-gradient products (`g.t() @ x`, tokens as the reduction) against the same
product after transposing `g` (through a float32 copy, the fastest transpose PyTorch offers here) and the forward
product at the same sizes; medians of 10 calls taking turns. Usage: weight_gradient_layouts.py"""
import statistics, time

import torch
from zhen import hardware
hardware.keep_freed_memory(large_blocks=True)
torch.set_num_threads(2)
bf = torch.bfloat16
M = 4094
def tr_float(g): return g.t().float().to(bf)
def tr_copy(g): return g.t().contiguous()
def tr_f32view(g):  # transpose through float32 staging buffer
    return torch.empty(g.shape[1], g.shape[0], dtype=torch.float32).copy_(g.t()).to(bf)
fns = {}
for (i, o) in [(512, 2048), (2048, 512), (512, 512), (512, 1536)]:
    x = torch.randn(M, i, dtype=bf); g = torch.randn(M, o, dtype=bf)
    fl = 2 * M * i * o
    fns[f"{i}->{o} g.t()@x"] = (lambda g=g, x=x: g.t() @ x, fl)
    fns[f"{i}->{o} tr_float(g)@x"] = (lambda g=g, x=x: tr_float(g) @ x, fl)
    fns[f"{i}->{o} x.t() via float @g, .t()"] = (lambda g=g, x=x: (tr_float(x) @ g).t(), fl)
    fns[f"{i}->{o} transpose only g"] = (lambda g=g: tr_float(g), fl)
    fns[f"{i}->{o} transpose only x"] = (lambda x=x: tr_float(x), fl)
    gt = g.t().contiguous()
    fns[f"{i}->{o} pre-transposed gT@x"] = (lambda gt=gt, x=x: gt @ x, fl)
times = {k: [] for k in fns}
for _ in range(10):
    for k, (f, _) in fns.items():
        s = time.perf_counter(); f(); times[k].append(time.perf_counter() - s)
for k, (f, fl) in fns.items():
    m = statistics.median(times[k]); print(f"{k:40s} {m*1e3:6.2f} ms {fl/m/1e9:6.0f} GFLOP/s")
g = torch.randn(M, 2048, dtype=bf)
print("equal", torch.equal(tr_float(g), g.t().contiguous()))
