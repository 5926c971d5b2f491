"""Greedy search's argmax over one row of bf16 logits: with and without their float32 copy. Usage: bf16_argmax.py"""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
from common import median_time
from zhen.fast_generation import argmax, Workspace
def med(f): return median_time(f, 2000, warmup=50) * 1e6
for V in (16000, 32000):
    x = torch.randn(1, V).bfloat16(); ws = Workspace()
    print(V, "copy+argmax helper %.1f us" % med(lambda: argmax(ws.copy("logits", x, torch.float32))))
    print(V, "argmax helper on bf16 %.1f us" % med(lambda: argmax(x)))
    print(V, "torch.argmax bf16 %.1f us" % med(lambda: x.argmax(-1)))
    xf = x.float()
    print(V, "torch.argmax f32 %.1f us" % med(lambda: xf.argmax(-1)))
    print(V, "copy only %.1f us" % med(lambda: ws.copy("logits", x, torch.float32)))
    assert torch.equal(argmax(x), argmax(x.float())) and torch.equal(x.argmax(-1), xf.argmax(-1))
