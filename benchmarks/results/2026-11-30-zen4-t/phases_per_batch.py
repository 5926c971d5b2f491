"""Batches B (env) of zhen.translate's Tatoeba batches with max_new_tokens 1 (encoder and a step), 2 and unlimited, zhen int8 against CTranslate2Generator, one thread, medians of 7. Run from the repository root."""
import os, sys, time, warnings, statistics, torch
warnings.simplefilter("ignore")
torch.set_num_threads(1)
exec(open("benchmarks/results/2026-11-30-zen4-s/setup_batches.py").read())
from zhen.convert_ctranslate2 import CTranslate2Generator
g1 = CTranslate2Generator("/tmp/s38/ct2-int8", compute_type="int8", inter_threads=1, intra_threads=1)
B = [int(x) for x in os.environ.get("B", "0,1,2").split(",")]
with torch.inference_mode(), fg.FastDecoder(q, script_layers=True) as s:
    for b in batches: s.generate(**b); g1.generate(**b)
    for i in B:
        res = {}
        for n in (1, 2, None):
            b = dict(batches[i], max_new_tokens=n) if n else batches[i]
            for name, f in (("zhen", s.generate), ("ct2", g1.generate)):
                ts = []
                for _ in range(7):
                    t = time.perf_counter(); f(**b); ts.append(time.perf_counter() - t)
                res[name, n] = statistics.median(ts) * 1e3
        print(f"batch {i}: " + "  ".join(f"{k[0]}{k[1] or ''} {v:.1f}" for k, v in res.items()))
