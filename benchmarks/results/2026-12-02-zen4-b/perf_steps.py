"""Warms up, writes its pid to /tmp/s60/ready for `perf record -p`, then runs 8 steps."""
import os
import sys
import time

sys.path.insert(0, "benchmarks/results/2026-12-02-zen4-b")
from probe_setup import built

step, batches = built(sys.argv[1])
for b in batches:
    step(b)
open("/tmp/s60/ready", "w").write(str(os.getpid()))
time.sleep(1)
t = time.perf_counter()
for b in batches:
    step(b)
print("8 steps", time.perf_counter() - t)
