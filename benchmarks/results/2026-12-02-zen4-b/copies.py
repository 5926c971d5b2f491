import sys, collections
sys.path.insert(0, "benchmarks/results/2026-12-02-zen4-b")
from probe_setup import built
step, batches = built("zhen-prenorm-bf16", count=4)
for b in batches: step(b)
from torch.profiler import profile, ProfilerActivity
with profile(activities=[ProfilerActivity.CPU], record_shapes=True, with_stack=False) as prof:
    step(batches[0])
rows = [e for e in prof.key_averages(group_by_input_shape=True) if e.key in ("aten::_to_copy", "aten::copy_", "aten::contiguous", "aten::clone")]
rows.sort(key=lambda e: -e.self_cpu_time_total)
tot = collections.Counter(); cnt = collections.Counter()
for e in rows:
    tot[e.key] += e.self_cpu_time_total; cnt[e.key] += e.count
print({k: (cnt[k], round(tot[k] / 1e3, 1)) for k in tot})
for e in rows[:40]:
    print(f"{e.key:16s} {e.count:5d} {e.self_cpu_time_total/1e3:8.2f} ms  {str(e.input_shapes)[:110]}")
