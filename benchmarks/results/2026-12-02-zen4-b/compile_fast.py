import sys, time, warnings
sys.path.insert(0, "benchmarks")
warnings.simplefilter("ignore")
import torch
torch.set_num_threads(2)
import bench_train
from bench_train import build_step, make_batches
mode = sys.argv[1]
orig_zhen_model = bench_train.zhen_model
holder = {}
def zm(*a, **k):
    m = orig_zhen_model(*a, **k); holder["m"] = m; return m
bench_train.zhen_model = zm
step = build_step("zhen-prenorm-bf16", "tiny", "fused", None)
model = holder["m"]
if mode == "compiled":
    for layer in [*model.model.encoder.layers, *model.model.decoder.layers]:
        if sys.argv[2] == "mlp":
            layer.mlp.compile(dynamic=True)
        else:
            layer.compile(dynamic=True)
batches = make_batches("tiny", 4096, 8)
t = time.perf_counter()
for b in batches: step(b)
print("warmup", time.perf_counter() - t)
ts = []
for r in range(2):
    for b in batches:
        t = time.perf_counter(); step(b); ts.append(time.perf_counter() - t)
print(sys.argv[1:], f"best-of {sum(sorted(ts)[:8]):.3f}", f"sum {sum(ts):.3f}")
