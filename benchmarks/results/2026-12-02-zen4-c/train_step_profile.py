import sys, warnings, torch
warnings.simplefilter("ignore")
sys.path.insert(0, "benchmarks")
from bench_train import build_step, make_batches
torch.set_num_threads(2)
size = sys.argv[1]; system = sys.argv[2]
step = build_step(system, size, "fused", None)
batches = make_batches(size, 4096, 4)
for b in batches[:2]: step(b)
from torch.profiler import profile, ProfilerActivity
with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
    for b in batches[2:]: step(b)
print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=30)); rows=[e for e in prof.key_averages(group_by_input_shape=True) if e.key in ("aten::copy_","aten::random_","aten::sum","aten::cat","aten::index_select")]; rows.sort(key=lambda e: -e.self_cpu_time_total)
for e in rows[:25]: print(e.key, e.count, "%.1f ms" % (e.self_cpu_time_total/1e3), str(e.input_shapes)[:150])
