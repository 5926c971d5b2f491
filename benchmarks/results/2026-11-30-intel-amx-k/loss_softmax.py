"""The loss's softmax, log-softmax, exp and amax over (2,048, 32,000) logits, with training's heap settings.
Usage: loss_softmax.py"""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
from common import median_time
from zhen import hardware
print(hardware.keep_freed_memory(True))
def med(f): return median_time(f, 7) * 1e3
x = (torch.randn(2048, 32000) * 3).bfloat16()
xf = x.float()
for r in range(2):
    print("bf16 softmax %.1f ms" % med(lambda: x.softmax(-1)))
    print("bf16 -> f32 softmax %.1f ms" % med(lambda: torch.softmax(x, -1, dtype=torch.float32)))
    print("f32 softmax %.1f ms" % med(lambda: xf.softmax(-1)))
    print("bf16 log_softmax %.1f ms" % med(lambda: x.log_softmax(-1)))
    print("bf16 exp %.1f ms" % med(lambda: x.exp()))
    print("f32 exp %.1f ms" % med(lambda: xf.exp()))
    print("bf16 amax %.1f ms" % med(lambda: x.amax(-1)))
    print("bf16 sub_ %.1f ms" % med(lambda: x.clone()))
