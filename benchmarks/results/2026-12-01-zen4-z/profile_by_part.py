# int8 greedy on real text (one thread, the set-up of int8_batches.py), one round under the torch profiler: the
# operators by input shape, the time by part of the work, and the copies by shape. argv: direction (zh-en, en-zh)
import collections
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
events = prof.key_averages(group_by_input_shape=True)
print(events.table(sort_by="self_cpu_time_total", row_limit=40, max_name_column_width=40, max_shapes_column_width=90))
ms = collections.Counter(); calls = collections.Counter()
for e in events:
    s = e.input_shapes[0] if e.input_shapes else []
    if e.key.startswith("quantized::linear"):
        k = "head" if len(s) == 2 else ("step layers" if len(s) == 3 and s[1] == 1 else "encoder products")
    else:
        k = "other"
    ms[k] += e.self_cpu_time_total / 1e3; calls[k] += e.count
print("by part (ms, calls):", {k: (round(v, 1), calls[k]) for k, v in ms.items()})
copies = sorted(((e.self_cpu_time_total / 1e3, e.count, str(e.input_shapes)[:80]) for e in events if e.key == "aten::copy_"), reverse=True)
print("copy_ total ms", round(sum(c[0] for c in copies), 1), "calls", sum(c[1] for c in copies))
for c in copies[:15]:
    print(round(c[0], 1), c[1], c[2])
