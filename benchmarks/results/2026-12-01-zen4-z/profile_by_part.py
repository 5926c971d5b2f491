import sys
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
print(prof.key_averages(group_by_input_shape=True).table(sort_by="self_cpu_time_total", row_limit=40, max_name_column_width=40, max_shapes_column_width=90))
import collections
cat = collections.Counter(); calls = collections.Counter()
for e in prof.key_averages(group_by_input_shape=True):
    s = e.input_shapes[0] if e.input_shapes else []
    if e.key.startswith("quantized::linear"):
        k = "head" if len(s) == 2 else ("step layers" if len(s) == 3 and s[1] == 1 else "encoder products")
    else:
        k = "other"
    cat[k] += e.self_cpu_time_total / 1e3; calls[k] += e.count
print({k: (round(v, 1), calls[k]) for k, v in cat.items()})
