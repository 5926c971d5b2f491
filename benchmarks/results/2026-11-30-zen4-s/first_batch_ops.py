"""A session's first generate call against its second on the same batch: the operators that cost more the first time."""
import os, sys, time, warnings, torch
warnings.simplefilter("ignore")
torch.set_num_threads(1)
exec(open("benchmarks/results/2026-11-30-zen4-s/setup_batches.py").read())
from torch.profiler import profile
import cProfile, pstats
with torch.inference_mode(), fg.FastDecoder(q, script_layers=False) as s:
    b = batches[int(os.environ.get("B", "0"))]
    profs = []
    for i in range(2):
        with profile() as p:
            t = time.perf_counter(); s.generate(**b); print(f"call {i}: {1e3*(time.perf_counter()-t):.0f} ms")
        profs.append({e.key: (e.self_cpu_time_total, e.count) for e in p.key_averages()})
    diff = sorted(((v[0] - profs[1].get(k, (0, 0))[0], k, v[1]) for k, v in profs[0].items()), reverse=True)[:15]
    for d, k, c in diff: print(f"{d/1e3:8.1f} ms more  {k} ({c} calls)")
