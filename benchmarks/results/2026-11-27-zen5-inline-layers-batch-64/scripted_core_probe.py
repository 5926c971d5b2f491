"""Linears in Python, the rest of a layer step in TorchScript (core), against all-Python (py) and all-TorchScript (ts)."""
import sys, time, torch, warnings, statistics as st
warnings.filterwarnings("ignore")
import torch.nn.functional as F
from typing import List, Tuple

@torch.jit.script
def layer_step(h: torch.Tensor, ln: List[torch.Tensor], packed: List[torch.classes.quantized.LinearPackedParamsBase],
               keys: torch.Tensor, values: torch.Tensor, pos: int, src_k: torch.Tensor, src_v: torch.Tensor,
               src_bias: torch.Tensor, heads: int, scaling: float) -> torch.Tensor:
    rows, d = h.shape[0], h.shape[-1]
    hd = d // heads
    y = torch.layer_norm(h, [d], ln[0], ln[1], 1e-5)
    qkv = torch.ops.quantized.linear_dynamic(y, packed[0], False).view(rows, 1, 3, heads, hd).permute(2, 0, 3, 1, 4)
    q, k, v = qkv[0], qkv[1], qkv[2]
    keys[:, :, pos : pos + 1] = k
    values[:, :, pos : pos + 1] = v
    s = torch.matmul(q.contiguous(), keys[:, :, : pos + 1].transpose(-1, -2)) * scaling
    a = torch.matmul(s.softmax(-1), values[:, :, : pos + 1]).transpose(1, 2).reshape(rows, 1, d)
    h = h + torch.ops.quantized.linear_dynamic(a, packed[1], False)
    y = torch.layer_norm(h, [d], ln[2], ln[3], 1e-5)
    q = torch.ops.quantized.linear_dynamic(y, packed[2], False).view(rows, 1, heads, hd).transpose(1, 2)
    s = torch.matmul(q.contiguous(), src_k) * scaling + src_bias
    a = torch.matmul(s.softmax(-1), src_v).transpose(1, 2).reshape(rows, 1, d)
    h = h + torch.ops.quantized.linear_dynamic(a, packed[3], False)
    y = torch.layer_norm(h, [d], ln[4], ln[5], 1e-5)
    return h + torch.ops.quantized.linear_dynamic(torch.ops.quantized.linear_relu_dynamic(y, packed[4], False), packed[5], False)

def py_step(h, ln, packed, keys, values, pos, src_k, src_v, src_bias, heads: int, scaling: float):
    rows, d = h.shape[0], h.shape[-1]
    hd = d // heads
    y = torch.layer_norm(h, [d], ln[0], ln[1], 1e-5)
    q, k, v = torch.ops.quantized.linear_dynamic(y, packed[0], False).view(rows, 1, 3, heads, hd).permute(2, 0, 3, 1, 4)
    keys[:, :, pos : pos + 1] = k
    values[:, :, pos : pos + 1] = v
    s = torch.matmul(q.contiguous(), keys[:, :, : pos + 1].transpose(-1, -2)) * scaling
    a = torch.matmul(s.softmax(-1), values[:, :, : pos + 1]).transpose(1, 2).reshape(rows, 1, d)
    h = h + torch.ops.quantized.linear_dynamic(a, packed[1], False)
    y = torch.layer_norm(h, [d], ln[2], ln[3], 1e-5)
    q = torch.ops.quantized.linear_dynamic(y, packed[2], False).view(rows, 1, heads, hd).transpose(1, 2)
    s = torch.matmul(q.contiguous(), src_k) * scaling + src_bias
    a = torch.matmul(s.softmax(-1), src_v).transpose(1, 2).reshape(rows, 1, d)
    h = h + torch.ops.quantized.linear_dynamic(a, packed[3], False)
    y = torch.layer_norm(h, [d], ln[4], ln[5], 1e-5)
    return h + torch.ops.quantized.linear_dynamic(torch.ops.quantized.linear_relu_dynamic(y, packed[4], False), packed[5], False)


@torch.jit.script
def self_core(qkv: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, pos: int, heads: int, scaling: float) -> torch.Tensor:
    rows, d = qkv.shape[0], qkv.shape[-1] // 3
    hd = d // heads
    p = qkv.view(rows, 1, 3, heads, hd).permute(2, 0, 3, 1, 4)
    q, k, v = p[0], p[1], p[2]
    keys[:, :, pos : pos + 1] = k
    values[:, :, pos : pos + 1] = v
    s = torch.matmul(q.contiguous(), keys[:, :, : pos + 1].transpose(-1, -2)) * scaling
    return torch.matmul(s.softmax(-1), values[:, :, : pos + 1]).transpose(1, 2).reshape(rows, 1, d)

@torch.jit.script
def cross_core(qp: torch.Tensor, src_k: torch.Tensor, src_v: torch.Tensor, bias: torch.Tensor, heads: int, scaling: float) -> torch.Tensor:
    rows, d = qp.shape[0], qp.shape[-1]
    q = qp.view(rows, 1, heads, d // heads).transpose(1, 2)
    s = torch.matmul(q.contiguous(), src_k) * scaling + bias
    return torch.matmul(s.softmax(-1), src_v).transpose(1, 2).reshape(rows, 1, d)

@torch.jit.script
def add_norm(h: torch.Tensor, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor):
    h = h + x
    return h, torch.layer_norm(h, [h.shape[-1]], w, b, 1e-5)

def core_step(h, ln, packed, keys, values, pos, src_k, src_v, bias, heads: int, scaling: float):
    lin = torch.ops.quantized.linear_dynamic
    d = h.shape[-1]
    y = torch.layer_norm(h, [d], ln[0], ln[1], 1e-5)
    a = self_core(lin(y, packed[0], False), keys, values, pos, heads, scaling)
    h, y = add_norm(h, lin(a, packed[1], False), ln[2], ln[3])
    a = cross_core(lin(y, packed[2], False), src_k, src_v, bias, heads, scaling)
    h, y = add_norm(h, lin(a, packed[3], False), ln[4], ln[5])
    return h + lin(torch.ops.quantized.linear_relu_dynamic(y, packed[4], False), packed[5], False)

from torch.ao.nn.quantized.dynamic import Linear as QL
def qlin(i, o):
    q = QL(i, o); q.set_weight_bias(torch.quantize_per_tensor(torch.randn(o, i) * 0.05, 0.01, 0, torch.qint8), torch.zeros(o))
    return q._packed_params._packed_params
d, heads, rows, L, S = int(sys.argv[1]), 4, int(sys.argv[2]), 40, 20
packed = [qlin(d, 3 * d), qlin(d, d), qlin(d, d), qlin(d, d), qlin(d, 4 * d), qlin(4 * d, d)]
ln = [torch.ones(d), torch.zeros(d)] * 3
h = torch.randn(rows, 1, d)
keys, values = torch.zeros(rows, heads, L, d // heads), torch.zeros(rows, heads, L, d // heads)
src_k, src_v = torch.randn(rows, heads, d // heads, S), torch.randn(rows, heads, S, d // heads)
bias = torch.zeros(rows, 1, 1, S)
def run(f, layers=3, steps=32):
    for pos in range(steps):
        x = h
        for _ in range(layers):
            x = f(x, ln, packed, keys, values, pos, src_k, src_v, bias, heads, 0.125)
    return x
import threading
def timed(f, streams):
    torch.set_num_threads(1)
    def work():
        for _ in range(20): run(f)
    ts = [threading.Thread(target=work) for _ in range(streams)]
    t = time.perf_counter(); [x.start() for x in ts]; [x.join() for x in ts]
    return streams * 20 * 32 / (time.perf_counter() - t)
with torch.inference_mode():
    print("equal", torch.equal(run(py_step), run(core_step)), torch.equal(run(py_step), run(layer_step)))
    for _ in range(3): run(core_step); run(layer_step)
    for r in range(2):
        print(f"d={d} rows={rows}: 1 thread py {timed(py_step,1):.0f} core {timed(core_step,1):.0f} ts {timed(layer_step,1):.0f} | 2 streams py {timed(py_step,2):.0f} core {timed(core_step,2):.0f} ts {timed(layer_step,2):.0f}")
