"""CTranslate2Generator alone on zhen.translate's Tatoeba batches (R rounds), for perf record -e cpu-clock -g."""
import os, sys, time, warnings, statistics, torch
warnings.simplefilter("ignore")
torch.set_num_threads(1)
exec(open("benchmarks/results/2026-11-30-zen4-s/setup_batches.py").read())
from zhen.convert_ctranslate2 import CTranslate2Generator
g1 = CTranslate2Generator("/tmp/s38/ct2-int8", compute_type="int8", inter_threads=1, intra_threads=1)
for b in batches: g1.generate(**b)
time.sleep(1)
t = time.perf_counter()
for _ in range(int(os.environ.get("R", "10"))):
    for b in batches: g1.generate(**b)
print("ct2", time.perf_counter() - t)
