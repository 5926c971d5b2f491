"""Error of dynamic int8 products against float32 with PyTorch's 7-bit activations (reduce_range=True, what its
dynamic Linear does) and the full 8 bits, for FBGEMM's and oneDNN's kernels, on inputs shaped like a layer's (normal)
and a feed-forward's second product's (after ReLU), and whether the full range saturates (error far above 7-bit's).
Usage (repo root): int8_activation_range.py"""
import warnings
warnings.simplefilter("ignore")
import torch
from torch import nn
from zhen.quantization import quantize_parts, pack_for
import copy
torch.manual_seed(0)
op = torch.ops.quantized.linear_dynamic
print(f"{'shape':12s} {'input':6s} {'engine':7s} {'7-bit rel err':>14s} {'8-bit rel err':>14s} {'ratio':>6s}  {'fbgemm-onednn 8-bit':>20s}")
for i, o in [(256, 1024), (1024, 256), (512, 2048), (2048, 512), (512, 32000)]:
    lin = nn.Linear(i, o)
    q = quantize_parts(nn.Sequential(copy.deepcopy(lin)), onednn_head=False)[0]
    packs = {"fbgemm": q._packed_params._packed_params,
             "onednn": pack_for(copy.deepcopy(q), "onednn")._packed_params._packed_params}
    w = q.weight().dequantize()
    for kind in ("normal", "relu"):
        x = torch.randn(64, i) * 3
        if kind == "relu":
            x = x.relu()
        exact = x @ w.T + lin.bias.detach()  # the int8 weight's product in float32: the error is the activations'
        outs = {}
        for engine, packed in packs.items():
            errs = []
            for reduce in (True, False):
                y = op(x, packed, reduce)
                outs[engine, reduce] = y
                errs.append(((y - exact).norm() / exact.norm()).item())
            print(f"{i:4d}x{o:<6d}  {kind:6s} {engine:7s} {errs[0]:14.2e} {errs[1]:14.2e} {errs[0] / errs[1]:6.2f}", end="")
            if engine == "onednn":
                d = outs["fbgemm", False] - outs["onednn", False]
                print(f"  {(d.norm() / exact.norm()).item():20.2e}")
            else:
                print()
