import statistics, sys, time
import torch
from zhen import hardware
hardware.keep_freed_memory(large_blocks=True)
bf = torch.bfloat16
rounds = 12
for (i, o) in [(512, 2048), (2048, 512), (512, 512)]:
    res = {}
    fns = {}
    for M in (3967, 3968, 3984, 4000, 4032, 4096):
        x = torch.randn(M, i, dtype=bf); g = torch.randn(M, o, dtype=bf); w = torch.randn(o, i, dtype=bf)
        fns[f"dw M={M}"] = (lambda g=g, x=x: g.t() @ x, 2 * M * i * o)
        fns[f"fwd M={M}"] = (lambda x=x, w=w: x @ w.t(), 2 * M * i * o)
    times = {k: [] for k in fns}
    for _ in range(rounds):
        for k, (f, _) in fns.items():
            s = time.perf_counter(); f(); times[k].append(time.perf_counter() - s)
    print(f"--- {i} -> {o}")
    for k, (f, fl) in fns.items():
        m = statistics.median(times[k]); print(f"{k:14s} {m*1e3:6.2f} ms {fl/m/1e9:6.0f} GFLOP/s")
