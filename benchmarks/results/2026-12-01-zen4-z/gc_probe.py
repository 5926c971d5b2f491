import gc, os, sys, time
sys.path.insert(0, "benchmarks/results/2026-12-01-zen4-y")
import torch
from int8_batches import greedy_batches, quantized as q
from zhen.fast_generation import FastDecoder
batches = greedy_batches(sys.argv[1])
counts = [0, 0, 0]; spent = [0.0, 0.0, 0.0]; start = [0.0]
def cb(phase, info):
    if phase == "start": start[0] = time.perf_counter()
    else: counts[info["generation"]] += 1; spent[info["generation"]] += time.perf_counter() - start[0]
print("objects tracked", len(gc.get_objects()), "thresholds", gc.get_threshold())
with torch.inference_mode(), FastDecoder(q, weights="auto") as dec:
    list(dec.generate_batches(batches, 1))
    gc.callbacks.append(cb)
    t = time.perf_counter()
    for _ in range(3): list(dec.generate_batches(batches, 1))
    el = time.perf_counter() - t
print("per round ms", round(el / 3 * 1000, 1), "collections per round", [c / 3 for c in counts], "ms per round", [round(s / 3 * 1000, 2) for s in spent])
