"""Tiny bf16 training steps (bench_train's), 2 threads: the fused loss's forward timed inside each step, and the
step's minor page faults, for loss chunk sizes taking turns batch by batch."""
import sys, time, resource, statistics, warnings
sys.path.insert(0, "benchmarks")
warnings.simplefilter("ignore")
import torch
torch.set_num_threads(2)
from bench_train import build_step, make_batches
import zhen.fast_training as ft
inner = ft.LinearCrossEntropy.forward
spent = []
def timed(ctx, *a):
    s = time.perf_counter(); r = inner(ctx, *a); spent.append(time.perf_counter() - s); return r
ft.LinearCrossEntropy.forward = staticmethod(timed)
chunks = [int(c) for c in sys.argv[1].split(",")]
size = sys.argv[2] if len(sys.argv) > 2 else "tiny"
steps = {c: build_step("zhen-prenorm-bf16", size, "fused", c) for c in chunks}
batches = make_batches(size, 4096, 8)
for f in steps.values():
    for b in batches[:2]: f(b)
res = {c: {"step": [], "loss": [], "faults": []} for c in chunks}
for r in range(3):
    for b in batches[2:]:
        for c in (chunks if r % 2 == 0 else chunks[::-1]):
            spent.clear(); f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            s = time.perf_counter(); steps[c](b); t = time.perf_counter() - s
            res[c]["step"].append(t); res[c]["loss"].append(sum(spent))
            res[c]["faults"].append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)
for c in chunks:
    v = res[c]
    print(f"chunk {c}: step median {1e3*statistics.median(v['step']):.0f} ms, loss forward median {1e3*statistics.median(v['loss']):.0f} ms, faults/step median {statistics.median(v['faults']):.0f}")
base = res[chunks[0]]["step"]
for c in chunks[1:]:
    print(f"step time chunk {chunks[0]} / chunk {c}, median of paired ratios: {statistics.median(a / b for a, b in zip(base, res[c]['step'])):.3f}")
