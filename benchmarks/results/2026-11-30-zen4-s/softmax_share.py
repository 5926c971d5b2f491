"""The share of aten::_softmax on rows shorter than 16 (and of SDPA's flash kernel) in 1,000 int8 translations."""
import os, sys, time, warnings, torch
warnings.simplefilter("ignore")
torch.set_num_threads(1)
exec(open("benchmarks/results/2026-11-30-zen4-s/setup_batches.py").read())
from torch.profiler import profile
with torch.inference_mode(), fg.FastDecoder(q, script_layers=True) as s:
    for b in batches: s.generate(**b)
    t = time.perf_counter()
    for b in batches: s.generate(**b)
    wall = time.perf_counter() - t
    with profile(record_shapes=True) as p:
        for b in batches: s.generate(**b)
tot = short = 0.0; n_short = n = 0
for e in p.key_averages(group_by_input_shape=True):
    if e.key in ("aten::_softmax", "aten::_scaled_dot_product_flash_attention_for_cpu"):
        shp = e.input_shapes[0]
        if e.key == "aten::_softmax":
            tot += e.self_cpu_time_total; n += e.count
            if shp and shp[-1] < 16: short += e.self_cpu_time_total; n_short += e.count
print(f"wall {wall*1e3:.0f} ms; softmax total {tot/1e3:.1f} ms in {n} calls; rows<16: {short/1e3:.1f} ms in {n_short} calls")
print("flash", sum(e.self_cpu_time_total for e in p.key_averages() if e.key=="aten::_scaled_dot_product_flash_attention_for_cpu")/1e3, "ms")
