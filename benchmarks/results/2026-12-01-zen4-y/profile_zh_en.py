import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
from int8_batches import greedy_batches, quantized as q
from zhen.fast_generation import FastDecoder
batches = greedy_batches("zh-en")
with torch.inference_mode(), FastDecoder(q, weights="auto") as dec:
    for _ in range(2): list(dec.generate_batches(batches, 1))
    with torch.profiler.profile() as p:
        list(dec.generate_batches(batches, 1))
print(p.key_averages().table(sort_by="self_cpu_time_total", row_limit=30))
