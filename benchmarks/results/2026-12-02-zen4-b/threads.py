"""`threads.py SYSTEM THREADS [SIZE]`: 8 warm-up steps, then the 8 batches twice; the sum of the 8 fastest steps and of
all 16."""
import sys
import time

sys.path.insert(0, "benchmarks/results/2026-12-02-zen4-b")
from probe_setup import built

step, batches = built(sys.argv[1], sys.argv[3] if len(sys.argv) > 3 else "tiny", threads=int(sys.argv[2]))
for b in batches:
    step(b)
ts = []
for r in range(2):
    for b in batches:
        t = time.perf_counter()
        step(b)
        ts.append(time.perf_counter() - t)
print(sys.argv[1:], f"total best-of {sum(sorted(ts)[:8]):.3f}", f"sum {sum(ts):.3f}")
