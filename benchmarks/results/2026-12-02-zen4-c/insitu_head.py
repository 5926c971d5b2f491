import os, sys, time, statistics
sys.path.insert(0, "benchmarks/results/2026-12-01-zen4-y")
import torch
from int8_batches import greedy_batches, quantized as q
from zhen import hardware
from zhen.fast_generation import FastDecoder
batches = greedy_batches("zh-en")
orig = hardware.packed_product
times = {}
def timed(op, *args):
    s = time.perf_counter(); out = orig(op, *args); d = time.perf_counter() - s
    x = args[0]
    if x.shape[-1] == 256 and out.shape[-1] == 16000:
        key = (tuple(x.shape), x.is_contiguous(), x.dtype)
        times.setdefault(key, []).append(d)
    return out
hardware.packed_product = timed
with torch.inference_mode(), FastDecoder(q, weights="auto") as dec:
    for _ in range(2): list(dec.generate_batches(batches, 1))
    times.clear()
    s = time.perf_counter(); list(dec.generate_batches(batches, 1)); total = time.perf_counter() - s
print("total %.3f s" % total)
for k, v in sorted(times.items(), key=lambda kv: -sum(kv[1]))[:8]:
    print(k, len(v), "sum %.1f ms, median %.2f ms, min %.2f" % (sum(v) * 1e3, statistics.median(v) * 1e3, min(v) * 1e3))
