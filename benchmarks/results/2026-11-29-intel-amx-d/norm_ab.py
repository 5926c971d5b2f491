"""zhen's base bf16 training step, pre-norm against post-norm (bench_train's zhen-prenorm-bf16 and
zhen-postnorm-bf16), taking turns batch by batch in one process (each first in every other round), then the
post-norm step's time by operator (torch.profiler) against the pre-norm one's. Usage: norm_ab.py [ROUNDS]"""

import os
import statistics
import sys
import time
import warnings

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from bench_train import build_step, make_batches  # noqa: E402


warnings.simplefilter("ignore")
torch.set_num_threads(2)
rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 4
steps = {name: build_step(f"zhen-{name}-bf16", "base", "fused", None) for name in ("prenorm", "postnorm")}
batches = make_batches("base", 4096, 4)
times = {name: [] for name in steps}
for round_ in range(rounds + 1):
    for batch in batches:
        for name, step in list(steps.items())[:: 1 if round_ % 2 else -1]:
            start = time.perf_counter()
            step(batch)
            if round_:
                times[name].append(time.perf_counter() - start)
for name, seconds in times.items():
    print(f"{name:>8}: median step {statistics.median(seconds) * 1e3:7.1f} ms")
ratios = [post / pre for pre, post in zip(times["prenorm"], times["postnorm"])]
print(f"postnorm / prenorm, median of {len(ratios)} paired steps: {statistics.median(ratios):.3f}")
profiles = {}
for name, step in steps.items():
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for batch in batches[:2]:
            step(batch)
    profiles[name] = {e.key: e.self_cpu_time_total / 2e3 for e in prof.key_averages()}
keys = sorted(profiles["postnorm"], key=lambda k: profiles["prenorm"].get(k, 0) - profiles["postnorm"][k])[:15]
print("operators postnorm spends more on (ms a step): op, prenorm, postnorm")
for key in keys:
    print(f"{key:40s} {profiles['prenorm'].get(key, 0):8.1f} {profiles['postnorm'][key]:8.1f}")
