"""The int8 session's softmax time (PyTorch's profiler: aten::_softmax, and the copies into and out of the
transposed layout) over zhen.translate's 1,000 Tatoeba batches (setup_batches.py of 2026-11-30-zen4-s), one thread,
warm. Run from the repository root, with the code before (780a5df) and after."""
import os, sys, time, warnings, collections, torch
warnings.simplefilter("ignore")
torch.set_num_threads(1)
exec(open("benchmarks/results/2026-11-30-zen4-s/setup_batches.py").read())
from torch.profiler import profile
with torch.inference_mode(), fg.FastDecoder(q, script_layers=True) as s:
    for _ in range(2):
        for b in batches: s.generate(**b)
    with profile(record_shapes=True) as p:
        for b in batches: s.generate(**b)
totals = collections.Counter()
for e in p.key_averages(group_by_input_shape=True):
    if e.key == "aten::_softmax":
        totals["softmax"] += e.self_cpu_time_total
        totals["softmax short rows" if e.input_shapes and e.input_shapes[0] and e.input_shapes[0][-1] < 16 else "softmax long rows"] += e.self_cpu_time_total
    if e.key == "aten::copy_":
        totals["all copies"] += e.self_cpu_time_total
total = sum(e.self_cpu_time_total for e in p.key_averages())
print({k: f"{v/1e3:.1f} ms" for k, v in totals.items()}, f"profiled total {total/1e3:.0f} ms")
