"""A/B of the fused loss's float32 logits by oneDNN against PyTorch's matmul, in zhen's default float32 training step
(linear layers through oneDNN either way), taking turns batch by batch in one process; best of N rounds per batch."""
import statistics, sys, time, warnings
import torch
warnings.simplefilter("ignore")
sys.path.insert(0, "/work/main/benchmarks")
from bench_train import build_step, make_batches
from zhen import fast_training

torch.set_num_threads(2)
size, rounds, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
batches = make_batches(size, 4096, count + 1)
fused = fast_training.fused_translation_loss
steps = {"onednn": build_step("zhen-prenorm-fp32", size, "fused", None),
         "matmul": build_step("zhen-prenorm-fp32", size, "fused", None)}
def run(name, batch):
    fast_training.fused_translation_loss = fused if name == "onednn" else (lambda *a: fused(*a[:6], False))
    start = time.perf_counter(); steps[name](batch); return time.perf_counter() - start
for name in steps: run(name, batches[0])
best = {name: [float("inf")] * count for name in steps}
for r in range(rounds):
    for i, batch in enumerate(batches[1:]):
        for name in (list(steps) if (r + i) % 2 == 0 else list(steps)[::-1]):
            best[name][i] = min(best[name][i], run(name, batch))
for name in steps: print(name, [f"{t:.2f}" for t in best[name]], f"sum {sum(best[name]):.2f}")
print("matmul / onednn: sum", f"{sum(best['matmul']) / sum(best['onednn']):.3f}",
      "median per batch", f"{statistics.median(m / o for m, o in zip(best['matmul'], best['onednn'])):.3f}")
