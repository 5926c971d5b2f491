"""zhen (FastDecoder, compiled programs) against CTranslate2 (CTranslate2Generator) on the same int8 batches of 64, warm,
one thread and two (two streams / two inter_threads over twice the batches), five turns each, medians."""
import os, sys, time, warnings, statistics, torch
warnings.simplefilter("ignore")
exec(open("benchmarks/results/2026-11-30-zen4-s/setup_batches.py").read())
from zhen.convert_ctranslate2 import CTranslate2Generator
g1 = CTranslate2Generator("/tmp/s38/ct2-int8", compute_type="int8", inter_threads=1, intra_threads=1)
g2 = CTranslate2Generator("/tmp/s38/ct2-int8", compute_type="int8", inter_threads=2, intra_threads=1)
def ct(gen, bs): return [w() for w in [gen.generate(**b, asynchronous=True) for b in bs]]
with torch.inference_mode(), fg.FastDecoder(q, script_layers=True) as s:
    def z(n):
        torch.set_num_threads(n)
        list(s.map(lambda kw: s.generate(**kw), batches * n, n))
    runs = {"zhen1": lambda: z(1), "zhen2": lambda: z(2), "ct1": lambda: ct(g1, batches), "ct2": lambda: ct(g2, batches * 2)}
    for f in runs.values(): f()
    res = {k: [] for k in runs}
    for r in range(5):
        for k, f in runs.items():
            t = time.perf_counter(); f(); res[k].append(time.perf_counter() - t)
    m = {k: statistics.median(v) for k, v in res.items()}
    print({k: f"{v*1e3:.0f} ms" for k, v in m.items()})
    print(f"zhen scaling {2*m['zhen1']/m['zhen2']:.2f}x, ct2 scaling {2*m['ct1']/m['ct2']:.2f}x; ratio zhen/ct2 1 thread {m['ct1']/m['zhen1']:.2f}, 2 threads {m['ct2']/m['zhen2']:.2f}")
