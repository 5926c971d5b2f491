import sys, time, torch, warnings
warnings.simplefilter("ignore")
sys.path.insert(0, "/work/main/benchmarks")
from bench_train import build_step, make_batches
torch.set_num_threads(2)
size = sys.argv[1]
batches = make_batches(size, 4096, 4)
steps = {"pre": build_step("zhen-prenorm-fp32", size, "fused", None), "post": build_step("zhen-postnorm-fp32", size, "fused", None)}
systems = [("pre", False), ("post", False), ("post", True), ("pre", True)]
for name, _ in systems[:2]: steps[name](batches[0])
best = {s: [9e9] * 3 for s in systems}
for r in range(int(sys.argv[2])):
    for i, b in enumerate(batches[1:]):
        order = systems if (r + i) % 2 == 0 else systems[::-1]
        for s in order:
            torch.set_flush_denormal(s[1])
            t = time.perf_counter(); steps[s[0]](b); best[s][i] = min(best[s][i], time.perf_counter() - t)
            torch.set_flush_denormal(False)
for s in systems: print(s, [f"{v:.2f}" for v in best[s]], f"sum {sum(best[s]):.2f}")
