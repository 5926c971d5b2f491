"""The same layer step with its six int8 products left in Python and the rest (heads, cache write, attention, residual
adds with the next norm) in TorchScript, against all-Python (py) and all-TorchScript (ts): scripted_layer_probe.py.

    python scripted_core_probe.py D_MODEL ROWS
"""
import sys

import torch

from scripted_layer_probe import compare, layer_step, scripted_layer_step


@torch.jit.script
def self_core(qkv: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, pos: int, heads: int,
              scaling: float) -> torch.Tensor:  # fmt: skip
    rows, d = qkv.shape[0], qkv.shape[-1] // 3
    p = qkv.view(rows, 1, 3, heads, d // heads).permute(2, 0, 3, 1, 4)
    keys[:, :, pos : pos + 1] = p[1]
    values[:, :, pos : pos + 1] = p[2]
    s = torch.matmul(p[0].contiguous(), keys[:, :, : pos + 1].transpose(-1, -2)) * scaling
    return torch.matmul(s.softmax(-1), values[:, :, : pos + 1]).transpose(1, 2).reshape(rows, 1, d)


@torch.jit.script
def cross_core(projected: torch.Tensor, src_k: torch.Tensor, src_v: torch.Tensor, bias: torch.Tensor, heads: int,
               scaling: float) -> torch.Tensor:  # fmt: skip
    rows, d = projected.shape[0], projected.shape[-1]
    q = projected.view(rows, 1, heads, d // heads).transpose(1, 2)
    s = torch.matmul(q.contiguous(), src_k) * scaling + bias
    return torch.matmul(s.softmax(-1), src_v).transpose(1, 2).reshape(rows, 1, d)


@torch.jit.script
def add_norm(h: torch.Tensor, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor):
    h = h + x
    return h, torch.layer_norm(h, [h.shape[-1]], w, b, 1e-5)


def core_step(h, ln, packed, keys, values, pos, src_k, src_v, bias, heads: int, scaling: float):
    product = torch.ops.quantized.linear_dynamic
    y = torch.layer_norm(h, [h.shape[-1]], ln[0], ln[1], 1e-5)
    attended = self_core(product(y, packed[0], False), keys, values, pos, heads, scaling)
    h, y = add_norm(h, product(attended, packed[1], False), ln[2], ln[3])
    attended = cross_core(product(y, packed[2], False), src_k, src_v, bias, heads, scaling)
    h, y = add_norm(h, product(attended, packed[3], False), ln[4], ln[5])
    return h + product(torch.ops.quantized.linear_relu_dynamic(y, packed[4], False), packed[5], False)


if __name__ == "__main__":
    compare({"py": layer_step, "core": core_step, "ts": scripted_layer_step}, int(sys.argv[1]), int(sys.argv[2]))
