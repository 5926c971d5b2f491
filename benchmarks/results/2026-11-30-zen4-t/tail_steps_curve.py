"""Batch B (env) of zhen.translate's Tatoeba batches cut at max_new_tokens = 2, 5, 8, ...: zhen's int8 session against CTranslate2Generator, one thread, medians of 7; the differences between cuts are the last 3 steps' cost, as the batch's rows finish. Run from the repository root."""
import os, sys, time, warnings, statistics, torch
warnings.simplefilter("ignore")
torch.set_num_threads(1)
exec(open("benchmarks/results/2026-11-30-zen4-s/setup_batches.py").read())
from zhen.convert_ctranslate2 import CTranslate2Generator
g1 = CTranslate2Generator("/tmp/s38/ct2-int8", compute_type="int8", inter_threads=1, intra_threads=1)
i = int(os.environ.get("B", "0")); pad = tok.pad_token_id
with torch.inference_mode(), fg.FastDecoder(q, script_layers=True) as s:
    for b in batches: s.generate(**b); g1.generate(**b)
    full = s.generate(**batches[i]); L = (full != pad).sum(1) - 1
    ks = list(range(2, full.shape[1] + 1, 3))
    prev = None
    for k in ks:
        b = dict(batches[i], max_new_tokens=k)
        zt, ct = [], []
        for _ in range(7):
            t = time.perf_counter(); s.generate(**b); zt.append(time.perf_counter() - t)
            t = time.perf_counter(); g1.generate(**b); ct.append(time.perf_counter() - t)
        z, c = statistics.median(zt) * 1e3, statistics.median(ct) * 1e3
        alive = int((L >= k).sum())
        if prev: print(f"k {k:3d} rows alive {alive:2d}  zhen {z:6.1f} ct2 {c:6.1f}  last 3 steps: zhen {z-prev[0]:5.1f} ct2 {c-prev[1]:5.1f}")
        prev = (z, c)
