"""small-cpu-shaped bf16 training steps (tiny model, 6+3 layers like `small`, 768-token batches), 2 threads: packed
attention's softmax through `hardware.row_softmax` as today (short rows transposed) against the plain softmax
(short_below=0), switched step by step on the same batches, the order alternating; median of paired ratios."""
import sys, time, statistics, warnings
sys.path.insert(0, "benchmarks")
warnings.simplefilter("ignore")
import torch
torch.set_num_threads(2)
import bench_train
from bench_train import build_step, make_batches
from zhen import hardware
import common
common.SIZES["small"] = {**common.SIZES["tiny"], "layers": 6}
size = sys.argv[1] if len(sys.argv) > 1 else "tiny"
tokens = int(sys.argv[2]) if len(sys.argv) > 2 else 768
step = build_step("zhen-prenorm-bf16", size, "fused", None)
batches = make_batches(size, tokens, 40)
today = hardware.row_softmax.__defaults__
plain = (0, today[1])
for b in batches[:4]:
    step(b)
times = {"today": [], "plain": []}
for rnd in range(3):
    for i, b in enumerate(batches):
        order = ["today", "plain"] if (i + rnd) % 2 == 0 else ["plain", "today"]
        for arm in order:
            hardware.row_softmax.__defaults__ = today if arm == "today" else plain
            s = time.perf_counter(); step(b); times[arm].append(time.perf_counter() - s)
hardware.row_softmax.__defaults__ = today
ratios = [p / t for t, p in zip(times["today"], times["plain"])]
print(f"{size}, {tokens}-token batches: today {1e3*statistics.median(times['today']):.1f} ms/step, plain softmax "
      f"{1e3*statistics.median(times['plain']):.1f}; plain/today median of {len(ratios)} paired ratios "
      f"{statistics.median(ratios):.3f} (quartiles {statistics.quantiles(ratios, n=4)[0]:.3f}-{statistics.quantiles(ratios, n=4)[2]:.3f})")
