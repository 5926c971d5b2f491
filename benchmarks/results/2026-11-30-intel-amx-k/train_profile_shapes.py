"""Where a base bf16 training step of zhen's CPU path spends its time now (torch.profiler, 2 steps after a warm-up
over the same batches), by operator and by operator and input shape.
Usage: train_profile_shapes.py"""

import os
import sys

import torch

sys.path.insert(0, "benchmarks")
from bench_train import build_step, make_batches  # noqa: E402


torch.set_num_threads(2)
step = build_step("zhen-prenorm-bf16", "base", "fused", None)
batches = make_batches("base", 4096, 2)
for batch in batches:
    step(batch)
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
    for batch in batches:
        step(batch)
averages = prof.key_averages()
print(averages.table(sort_by="self_cpu_time_total", row_limit=20, max_name_column_width=32))
print(prof.key_averages(group_by_input_shape=True).table(sort_by="self_cpu_time_total", row_limit=20,
                                                         max_name_column_width=28, max_shapes_column_width=56))  # fmt: skip
