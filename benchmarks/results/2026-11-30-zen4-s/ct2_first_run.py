"""CTranslate2's load, first and second run of the same 1,000 texts in one process (one thread)."""
import os, sys, time, warnings, torch
warnings.simplefilter("ignore")
exec(open("benchmarks/results/2026-11-30-zen4-s/setup_batches.py").read())
from zhen.convert_ctranslate2 import CTranslate2Generator
t = time.perf_counter()
g = CTranslate2Generator("/tmp/s38/ct2-int8", compute_type="int8", inter_threads=1, intra_threads=1)
load = time.perf_counter() - t
def run(): return [w() for w in [g.generate(**b, asynchronous=True) for b in batches]]
t = time.perf_counter(); run(); first = time.perf_counter() - t
t = time.perf_counter(); run(); second = time.perf_counter() - t
print(f"ct2 load {load*1e3:.0f} ms, first {first*1e3:.0f} ms, second {second*1e3:.0f} ms")
