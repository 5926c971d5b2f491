"""One pre-norm int8 decoder layer's step (fused QKV, cache write, attention over the cache and the source, FFN with
fused ReLU) run by Python and by TorchScript, in one thread and in two threads (decoding streams).

    python scripted_layer_probe.py D_MODEL ROWS      # e.g. 256 32
"""
import sys
import threading
import time
import warnings
from typing import List

import torch


warnings.filterwarnings("ignore")
HEADS, CACHE, SOURCE = 4, 40, 20


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
    ffn = torch.ops.quantized.linear_relu_dynamic(y, packed[4], False)
    return h + torch.ops.quantized.linear_dynamic(ffn, packed[5], False)


scripted_layer_step = torch.jit.script(layer_step)


def int8_weights(d: int) -> list:
    from torch.ao.nn.quantized.dynamic import Linear

    def packed(i, o):
        q = Linear(i, o)
        q.set_weight_bias(torch.quantize_per_tensor(torch.randn(o, i) * 0.05, 0.01, 0, torch.qint8), torch.zeros(o))
        return q._packed_params._packed_params

    return [packed(d, 3 * d), packed(d, d), packed(d, d), packed(d, d), packed(d, 4 * d), packed(4 * d, d)]


def step_inputs(d: int, rows: int) -> tuple:
    """The arguments after `h` of a layer step: norms, int8 weights, caches, the source's keys/values and mask."""
    head_dim = d // HEADS
    ln = [torch.ones(d), torch.zeros(d)] * 3
    keys, values = torch.zeros(rows, HEADS, CACHE, head_dim), torch.zeros(rows, HEADS, CACHE, head_dim)
    src_k, src_v = torch.randn(rows, HEADS, head_dim, SOURCE), torch.randn(rows, HEADS, SOURCE, head_dim)
    return ln, int8_weights(d), keys, values, src_k, src_v, torch.zeros(rows, 1, 1, SOURCE)


def run(step, h, inputs, layers=3, steps=32) -> torch.Tensor:
    ln, packed, keys, values, src_k, src_v, bias = inputs
    for pos in range(steps):
        x = h
        for _ in range(layers):
            x = step(x, ln, packed, keys, values, pos, src_k, src_v, bias, HEADS, 0.125)
    return x


def steps_per_second(step, h, inputs, streams: int, runs: int = 20) -> float:
    torch.set_num_threads(1)
    threads = [threading.Thread(target=lambda: [run(step, h, inputs) for _ in range(runs)]) for _ in range(streams)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return streams * runs * 32 / (time.perf_counter() - start)


def compare(steps: dict, d: int, rows: int):
    h, inputs = torch.randn(rows, 1, d), step_inputs(d, rows)
    with torch.inference_mode():
        outputs = [run(step, h, inputs) for step in steps.values()]
        print("bit-identical:", all(torch.equal(outputs[0], out) for out in outputs[1:]))
        for _ in range(2):
            rates = {streams: {name: steps_per_second(step, h, inputs, streams) for name, step in steps.items()}
                     for streams in (1, 2)}  # fmt: skip
            print(f"d={d} rows={rows}: " + " | ".join(
                f"{streams} stream(s) " + " ".join(f"{name} {rate:.0f}" for name, rate in by_name.items())
                for streams, by_name in rates.items()))  # fmt: skip


if __name__ == "__main__":
    compare({"py": layer_step, "ts": scripted_layer_step}, int(sys.argv[1]), int(sys.argv[2]))
