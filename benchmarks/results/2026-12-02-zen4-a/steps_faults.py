import sys, time, warnings, resource
sys.path.insert(0, "benchmarks")
warnings.simplefilter("ignore")
import torch
torch.set_num_threads(2)
from bench_train import build_step, make_batches
system, size, chunk = sys.argv[1], sys.argv[2], (int(sys.argv[3]) or None)
step = build_step(system, size, "fused", chunk)
batches = make_batches(size, 4096, 8)
for b in batches[:2]: step(b)
for b in batches[2:]:
    f0 = resource.getrusage(resource.RUSAGE_SELF); t = time.perf_counter(); step(b)
    f1 = resource.getrusage(resource.RUSAGE_SELF)
    print(f"{time.perf_counter() - t:.3f} s, {f1.ru_minflt - f0.ru_minflt} faults, sys {f1.ru_stime - f0.ru_stime:.3f} s")
