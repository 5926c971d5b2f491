# A/B: zhen tiny fp32 training step, nn.Linear (MKL) vs a oneDNN float32 Linear (forward + grad_x; grad_w by MKL)
import sys, time, warnings, statistics
sys.path.insert(0, "benchmarks")
warnings.simplefilter("ignore")
import torch
from torch import nn
torch.set_num_threads(2)
from bench_train import build_step, make_batches
lp = torch.ops.mkldnn._linear_pointwise

class OneDnnLinearFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias):
        ctx.save_for_backward(x, weight)
        ctx.has_bias = bias is not None
        flat = x.reshape(-1, x.shape[-1])
        return lp(flat, weight, bias, "none", [], "").view(*x.shape[:-1], weight.shape[0])
    @staticmethod
    def backward(ctx, grad_output):
        x, weight = ctx.saved_tensors
        grad = grad_output.reshape(-1, grad_output.shape[-1])
        gx = gw = gb = None
        if ctx.needs_input_grad[0]:
            gx = lp(grad.contiguous(), weight.t().contiguous(), None, "none", [], "").view(x.shape) if MODE["gx"] else (grad @ weight).view(x.shape)
        if ctx.needs_input_grad[1]:
            gw = grad.t() @ x.reshape(-1, x.shape[-1])
        if ctx.has_bias and ctx.needs_input_grad[2]:
            gb = grad.sum(0)
        return gx, gw, gb

MODE = {"gx": True}
class OneDnnLinear(nn.Linear):
    def forward(self, x):
        if x.dtype != torch.float32 or torch.is_autocast_enabled("cpu") or x.numel() < 64 * self.in_features:
            return super().forward(x)
        return OneDnnLinearFunction.apply(x, self.weight, self.bias)

size = sys.argv[1] if len(sys.argv) > 1 else "tiny"
step = build_step("zhen-prenorm-fp32", size, "fused", None)
batches = make_batches(size, 4096, 4)
model_modules = None
import gc
linears = [m for m in gc.get_objects() if type(m) is nn.Linear]
print("linears", len(linears))
def set_mode(on):
    for m in linears: m.__class__ = OneDnnLinear if on else nn.Linear
res = {"mkl": [], "onednn": [], "onednn-fwd-only": []}
for mode in ("mkl", "onednn", "onednn-fwd-only"):
    set_mode(mode != "mkl"); MODE["gx"] = mode == "onednn"; step(batches[0])
for r in range(int(sys.argv[2]) if len(sys.argv) > 2 else 3):
    for mode in ("mkl", "onednn", "onednn-fwd-only"):
        set_mode(mode != "mkl"); MODE["gx"] = mode == "onednn"
        t = time.perf_counter()
        for b in batches: step(b)
        res[mode].append((time.perf_counter() - t) / len(batches))
print(size, {k: round(statistics.median(v), 3) for k, v in res.items()}, {k: round(min(v), 3) for k, v in res.items()})
