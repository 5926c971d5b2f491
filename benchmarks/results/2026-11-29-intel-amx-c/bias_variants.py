"""A bf16 Linear's forward on packed tokens: addmm with the bias against mm then an in-place bias add, taking turns."""
import statistics, time
import torch
from zhen import hardware
hardware.keep_freed_memory(large_blocks=True)
bf = torch.bfloat16
M = 3967
for (i, o) in [(512, 2048), (2048, 512), (512, 1536), (512, 512)]:
    x = torch.randn(M, i, dtype=bf); w = torch.randn(o, i, dtype=bf); b = torch.randn(o, dtype=bf)
    fns = {
        "addmm": lambda: torch.addmm(b, x, w.t()),
        "mm + add_": lambda: torch.mm(x, w.t()).add_(b),
        "mm": lambda: torch.mm(x, w.t()),
        "F.linear": lambda: torch.nn.functional.linear(x, w, b),
    }
    times = {k: [] for k in fns}
    for _ in range(15):
        for k, f in fns.items():
            s = time.perf_counter(); f(); times[k].append(time.perf_counter() - s)
    base = statistics.median(times["addmm"])
    print(f"--- {M}x{i} -> {o}: " + ", ".join(f"{k} {statistics.median(t)*1e3:.2f} ms ({base/statistics.median(t):.2f}x)" for k, t in times.items()))
