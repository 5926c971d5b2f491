import sys
import torch
sys.path.insert(0, "benchmarks/results/2026-12-02-zen4-b")
from probe_setup import best_ms as t
torch.manual_seed(0)
x = (torch.randn(2048, 16384) * 3).bfloat16()
xf = x.float()
ob = torch.empty_like(x); of = torch.empty_like(xf)
for th in (1, 2):
    torch.set_num_threads(th)
    print(th, "softmax bf16 out %.2f" % t(lambda: torch._softmax(x, 1, False, out=ob)),
      "softmax f32 out %.2f" % t(lambda: torch._softmax(xf, 1, False, out=of)),
      "exp bf16 out %.2f" % t(lambda: torch.exp(x, out=ob)),
      "exp f32 out %.2f" % t(lambda: torch.exp(xf, out=of)),
      "amax bf16 %.2f" % t(lambda: x.amax(1)),
      "copy bf16 %.2f" % t(lambda: ob.copy_(x)))
