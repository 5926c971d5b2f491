import sys, time, collections, warnings, torch, os
warnings.simplefilter("ignore")
torch.set_num_threads(1)
exec(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "setup_batches.py")).read())
from torch.profiler import profile, ProfilerActivity
with torch.inference_mode(), fg.FastDecoder(q, script_layers=True) as s:
    for b in batches[:3]: s.generate(**b)
    t = time.perf_counter()
    for b in batches: s.generate(**b)
    print("total ms", (time.perf_counter() - t) * 1e3)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as p:
        for b in batches: s.generate(**b)
print(p.key_averages(group_by_input_shape=True).table(sort_by="self_cpu_time_total", row_limit=30, max_name_column_width=40, max_shapes_column_width=60))
