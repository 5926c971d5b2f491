# clip_grad_norm_ over the small preset's parameters (12 M, 138 tensors), float32 CPU, 2 threads: per-tensor loop
# (PyTorch's default off CUDA) against foreach=True, taking turns.
import time, torch, statistics
from zhen import ZhenConfig, ZhenForConditionalGeneration
from zhen.training_config import _presets
torch.set_num_threads(2)
model = ZhenForConditionalGeneration(ZhenConfig(vocab_size=16000, **_presets()["small"]))
params = [p for p in model.parameters()]
for p in params: p.grad = torch.randn_like(p)
print(len(params), sum(p.numel() for p in params))
cases = {"loop": lambda: torch.nn.utils.clip_grad_norm_(params, 1.0, foreach=False),
         "foreach": lambda: torch.nn.utils.clip_grad_norm_(params, 1.0, foreach=True)}
for f in cases.values(): f()
T = {k: [] for k in cases}
for r in range(20):
    for k, f in cases.items():
        t = time.perf_counter(); f(); T[k].append(time.perf_counter() - t)
for k, v in T.items(): print(k, "median %.2f ms" % (1000 * statistics.median(v)))
