"""Replace the draft's int8 quantization by fake int4 (group-wise asymmetric) float32 weights: agreement only."""
import torch
from torch import nn
from zhen import draft_decoding

def fake_int4(w, group):
    o, i = w.shape
    g = w.reshape(o, i // group, group)
    lo, hi = g.amin(-1, keepdim=True), g.amax(-1, keepdim=True)
    scale = (hi - lo).clamp(min=1e-8) / 15
    q = ((g - lo) / scale).round().clamp(0, 15)
    return (q * scale + lo).reshape(o, i)

def install(kind):
    if kind == "int8":
        return
    group = int(kind.removeprefix("int4g"))
    original = draft_decoding.quantize_parts
    def quantize_parts(model, parts=None, per_channel=True, onednn_head=True):
        for name in parts:
            parent_name, _, child = name.rpartition(".")
            parent = model.get_submodule(parent_name) if parent_name else model
            old = getattr(parent, child)
            new = nn.Linear(old.in_features, old.out_features, bias=old.bias is not None)
            with torch.no_grad():
                new.weight.copy_(fake_int4(old.weight.detach().float(), group))
                if old.bias is not None:
                    new.bias.copy_(old.bias)
            setattr(parent, child, new.eval())
        return model
    draft_decoding.quantize_parts = quantize_parts
