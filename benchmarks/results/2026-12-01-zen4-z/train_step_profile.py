# profile zhen's tiny training step (bench_train's step), two threads
import sys, time, warnings
sys.path.insert(0, "benchmarks")
warnings.simplefilter("ignore")
import torch
torch.set_num_threads(2)
from bench_train import build_step, make_batches
from torch.profiler import profile, ProfilerActivity
system = sys.argv[1]
step = build_step(system, "tiny", "fused", None)
batches = make_batches("tiny", 4096, 6)
for b in batches[:2]: step(b)
t = time.perf_counter()
for b in batches[2:]: step(b)
print("s/step", (time.perf_counter() - t) / 4)
with profile(activities=[ProfilerActivity.CPU]) as prof:
    for b in batches[2:]: step(b)
print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=30, max_name_column_width=60))
