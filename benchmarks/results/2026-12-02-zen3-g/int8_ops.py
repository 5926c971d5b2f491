exec(open("benchmarks/results/2026-12-02-zen3-g/int8_rounds.py").read().split("for r in range(4):")[0])
streams = 1
zhen_run(); zhen_run()
from torch.profiler import profile, ProfilerActivity
import time
with profile(activities=[ProfilerActivity.CPU]) as prof:
    t=time.perf_counter(); zhen_run(); dt=time.perf_counter()-t
print("sent/s under profiler", 1000/dt)
print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=35, max_name_column_width=50))
