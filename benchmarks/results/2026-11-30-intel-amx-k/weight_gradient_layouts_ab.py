"""A linear whose backward multiplies the weight gradient with the narrower operand first copied transposed (so that
oneDNN runs it on AMX) against `nn.Linear`, under bf16 autocast at 4,094 tokens, taking turns; the two gradients'
largest difference first. Usage: weight_gradient_layouts_ab.py"""
import os, sys, time, statistics
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
from torch import nn
import common  # noqa: F401  (the checkout's zhen, 2 threads)
from zhen import hardware
hardware.keep_freed_memory(True)

class NNGradLinear(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias):
        ctx.save_for_backward(x, weight)
        ctx.has_bias = bias is not None
        return nn.functional.linear(x, weight, bias)
    @staticmethod
    def backward(ctx, grad_output):
        x, weight = ctx.saved_tensors
        grad = grad_output.flatten(0, -2); xs = x.flatten(0, -2)
        grad_x = (grad @ weight).view(x.shape)
        if grad.shape[1] <= xs.shape[1]:
            grad_weight = grad.t().contiguous() @ xs
        else:
            grad_weight = (xs.t().contiguous() @ grad).t()
        grad_bias = grad.sum(0) if ctx.has_bias else None
        return grad_x, grad_weight, grad_bias

class FastLinear(nn.Linear):
    def forward(self, x):
        if not torch.is_autocast_enabled("cpu"):
            return super().forward(x)
        with torch.autocast("cpu", enabled=False):
            b = None if self.bias is None else self.bias.bfloat16()
            return NNGradLinear.apply(x.bfloat16(), self.weight.bfloat16(), b)

T = 4094
def run(cls, i, o):
    torch.manual_seed(0)
    m = cls(i, o); x = torch.randn(T, i, requires_grad=True)
    def step():
        m.zero_grad(set_to_none=True)
        with torch.autocast("cpu", torch.bfloat16):
            loss = m(x).float().square().mean()
        loss.backward()
    return step
for r0 in range(2):
    for i, o in [(512, 1536), (512, 1024), (512, 2048), (2048, 512), (512, 512)]:
        plain, fast = run(nn.Linear, i, o), run(FastLinear, i, o)
        plain(); fast()
        ratios = []; tp = []; tf = []
        for r in range(10):
            order = [(plain, tp), (fast, tf)] if r % 2 == 0 else [(fast, tf), (plain, tp)]
            for f, acc in order:
                s = time.perf_counter(); f(); acc.append(time.perf_counter() - s)
            ratios.append(tp[-1] / tf[-1])
        print("in %d out %d: plain %.1f ms, fast %.1f ms, paired plain/fast median %.3f" % (i, o, statistics.median(tp)*1e3, statistics.median(tf)*1e3, statistics.median(ratios)))
    A = torch.randn(2048, 2048, dtype=torch.bfloat16)
    t = min((lambda s: (A @ A, time.perf_counter() - s)[1])(time.perf_counter()) for _ in range(5))
    print("square GEMM %.0f GFLOP/s" % (2*2048**3/t/1e9))
