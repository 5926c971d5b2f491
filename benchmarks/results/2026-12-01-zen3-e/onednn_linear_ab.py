import sys, time, torch, warnings
warnings.simplefilter("ignore")
sys.path.insert(0, "/work/main/benchmarks")
from bench_train import make_batches
from common import zhen_model
from zhen import hardware
from zhen.fast_training import FastTraining
from torch import nn
size = sys.argv[1] if len(sys.argv) > 1 else "base"
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 2
lp = torch.ops.mkldnn._linear_pointwise

class OneDnnLinearFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias):
        ctx.save_for_backward(x, weight); ctx.has_bias = bias is not None
        x2 = x.reshape(-1, x.shape[-1])
        return lp(x2, weight, bias, "none", [], "").view(*x.shape[:-1], weight.shape[0])
    @staticmethod
    def backward(ctx, g):
        x, weight = ctx.saved_tensors
        g2 = g.reshape(-1, g.shape[-1])
        gx = lp(g2, weight.t(), None, "none", [], "").view(x.shape) if ctx.needs_input_grad[0] else None
        gw = g2.t() @ x.reshape(-1, x.shape[-1]) if ctx.needs_input_grad[1] else None
        gb = g2.sum(0) if ctx.has_bias and ctx.needs_input_grad[2] else None
        return gx, gw, gb

class OneDnnLinear(nn.Linear):
    def forward(self, x):
        if x.numel() < 64 * self.in_features: return super().forward(x)
        return OneDnnLinearFn.apply(x, self.weight, self.bias)

torch.set_num_threads(2)
batches = make_batches(size, 4096, 4)
steps = {}
for k in ("mkl", "onednn"):
    torch.manual_seed(0)
    m = zhen_model(size, variant="prenorm").train()
    with hardware.forced(float32_training="matmul"):  # as it ran, before e08e4d0: the swap below by hand
        f = FastTraining(m, mixed_precision="no", attention_kernel="sdpa")
    if k == "onednn":
        for mod in m.modules():
            if type(mod) is nn.Linear: mod.__class__ = OneDnnLinear
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4, fused=True)
    def step(b, m=m, f=f, opt=opt):
        loss = f.loss(m, {key: b[key] for key in ("input_ids", "attention_mask", "labels")})
        loss.backward(); opt.step(); opt.zero_grad(set_to_none=True)
        return loss.item()
    steps[k] = step
for k, s in steps.items(): print(k, "warm", s(batches[0]))
best = {k: [9e9] * 3 for k in steps}
for r in range(rounds):
    for i, b in enumerate(batches[1:]):
        for k in (list(steps) if (r + i) % 2 == 0 else list(steps)[::-1]):
            t = time.perf_counter(); l = steps[k](b); best[k][i] = min(best[k][i], time.perf_counter() - t)
        print(r, i, {k: f"{v[i]:.2f}" for k, v in best.items()}, flush=True)
for k in best: print(k, [f"{v:.2f}" for v in best[k]], f"sum {sum(best[k]):.2f}")
print("ratio", sum(best["mkl"]) / sum(best["onednn"]))
