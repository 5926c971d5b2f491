import collections, sys
sys.path.insert(0, "benchmarks/results/2026-12-01-zen4-y")
import torch
from torch.profiler import profile, ProfilerActivity
from int8_batches import greedy_batches, quantized as q
from zhen.fast_generation import FastDecoder
batches = greedy_batches(sys.argv[1])
with torch.inference_mode(), FastDecoder(q, weights="auto") as dec:
    list(dec.generate_batches(batches, 1))
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        list(dec.generate_batches(batches, 1))
rows = [(e.self_cpu_time_total / 1e3, e.count, str(e.input_shapes)[:80]) for e in prof.key_averages(group_by_input_shape=True) if e.key == "aten::copy_"]
rows.sort(reverse=True)
print("copy_ total ms", round(sum(r[0] for r in rows), 1), "calls", sum(r[1] for r in rows))
for r in rows[:15]: print(round(r[0], 1), r[1], r[2])
