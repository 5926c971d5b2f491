import sys, cProfile, pstats, torch
sys.path.insert(0, "/work/main/benchmarks/results/2026-11-27-intel-session-reuse-mkl-packing")
from probes import checkpoint_and_pairs
import zhen.fast_generation as fg
from zhen.translation import translate
m, tok, rows = checkpoint_and_pairs(sys.argv[1])
fg.FastDecoder.generate = lambda self, *a, **k: torch.ones(1, 3, dtype=torch.long)
for _ in range(20): translate(rows[3]["en"], m, tok, src_lang="en", tgt_lang="zh", num_beams=1)
import time
t=time.perf_counter()
for _ in range(200): translate(rows[3]["en"], m, tok, src_lang="en", tgt_lang="zh", num_beams=1)
print("translate without generate us", (time.perf_counter()-t)/200*1e6)
pr=cProfile.Profile(); pr.enable()
for _ in range(200): translate(rows[3]["en"], m, tok, src_lang="en", tgt_lang="zh", num_beams=1)
pr.disable(); pstats.Stats(pr).sort_stats("tottime").print_stats(25)
