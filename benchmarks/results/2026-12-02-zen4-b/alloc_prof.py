import sys, collections
sys.path.insert(0, "benchmarks/results/2026-12-02-zen4-b")
from probe_setup import built
step, batches = built(sys.argv[1], count=4)
for b in batches: step(b)
from torch.profiler import profile, ProfilerActivity
with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
    step(batches[0])
counts = collections.Counter(); small = collections.Counter()
for e in prof.key_averages():
    pass
# raw events with allocations
n_alloc = 0
for evt in prof.events():
    if evt.name == "[memory]":
        n_alloc += 1
print("memory events", n_alloc)
table = prof.key_averages().table(sort_by="self_cpu_memory_usage", row_limit=5)
# count ops by number of calls
ka = sorted(prof.key_averages(), key=lambda e: -e.count)
for e in ka[:45]:
    print(f"{e.count:6d} {e.key[:60]:60s} self {e.self_cpu_time_total/1e3:8.2f} ms  mem {e.self_cpu_memory_usage/1e6:8.1f} MB")
