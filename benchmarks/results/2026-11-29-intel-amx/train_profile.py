"""Where a base bf16 training step of zhen's CPU path spends its time (torch.profiler, 2 steps after a warm-up).
Usage: train_profile.py [SYSTEM]  (default zhen-prenorm-bf16)"""

import sys

import torch

sys.path.insert(0, "/work/main/benchmarks")
from bench_train import build_step, make_batches  # noqa: E402

torch.set_num_threads(2)
system = sys.argv[1] if len(sys.argv) > 1 else "zhen-prenorm-bf16"
step = build_step(system, "base", "fused", 512)
batches = make_batches("base", 4096, 3)
step(batches[0])
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
    for batch in batches[1:]:
        step(batch)
print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=25, max_name_column_width=40))
