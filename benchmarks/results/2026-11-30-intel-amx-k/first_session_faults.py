"""A model's first session: the time making its copies takes and the page faults it makes (run it with and without
THP_MEM_ALLOC_ENABLE=1). Usage: first_session_faults.py CHECKPOINT"""
import os, sys, time, resource
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import load
from zhen.fast_generation import FastDecoder
m, _ = load(sys.argv[1], compile_at_once=False)
f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
s = time.perf_counter(); d = FastDecoder(m); d.__enter__(); e = time.perf_counter() - s; d.__exit__()
f1 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
print("first enter %.1f ms, %d minor faults" % (e * 1e3, f1 - f0))
