import sys, time, warnings, collections
sys.path.insert(0, "benchmarks")
warnings.simplefilter("ignore")
import torch
torch.set_num_threads(2)
import zhen.fast_training as ft
from bench_train import build_step, make_batches
times = collections.defaultdict(float)
class Proxy:
    def __getattr__(self, name):
        return getattr(torch, name)
    def softmax(self, *a, **k):
        t = time.perf_counter(); y = torch.softmax(*a, **k); times["softmax"] += time.perf_counter() - t; return y
proxy = Proxy()
orig_lse = ft._log_sum_exp
def lse(l, p):
    t = time.perf_counter(); y = orig_lse(l, p); times["lse"] += time.perf_counter() - t; return y
orig_fwd = ft.LinearCrossEntropy.forward
def fwd(*a, **k):
    t = time.perf_counter(); y = orig_fwd(*a, **k); times["loss_forward"] += time.perf_counter() - t; return y
ft.LinearCrossEntropy.forward = staticmethod(fwd)
ft.torch = proxy
ft._log_sum_exp = lse
step = build_step("zhen-prenorm-bf16", "tiny", "fused", None)
batches = make_batches("tiny", 4096, 8)
for b in batches: step(b)
times.clear()
t = time.perf_counter()
for b in batches: step(b)
total = time.perf_counter() - t
print("per step ms: total %.1f" % (total / 8 * 1e3), {k: round(v / 8 * 1e3, 1) for k, v in times.items()})
