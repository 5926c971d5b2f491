"""FBGEMM's and oneDNN's int8 dynamic products (`quantized::linear_dynamic`, 7-bit activations as the quantized
modules call it) on the same per-channel int8 weights, at decoding and encoder shapes (rows x in x out), in a
process whose glibc keeps freed memory (as a zhen session does). `python int8_kernels.py THREADS`"""
import sys
import time

import torch

from zhen import hardware

hardware.keep_freed_memory()
torch.set_num_threads(int(sys.argv[1]))
SHAPES = [(256, 256, 16000), (64, 256, 16000), (8, 256, 16000), (256, 512, 32000), (128, 512, 32000),
          (32, 512, 32000), (256, 256, 768), (256, 256, 1024), (256, 1024, 256), (64, 512, 512), (32, 2048, 512),
          (1024, 256, 768), (1024, 1024, 256), (1024, 512, 2048), (1024, 2048, 512)]  # fmt: skip


def best_ms(function, repeats=20):
    function(), function()
    start = time.perf_counter()
    for _ in range(repeats):
        function()
    return (time.perf_counter() - start) / repeats * 1e3


def packed(engine, weight, bias):
    previous, torch.backends.quantized.engine = torch.backends.quantized.engine, engine
    try:
        return torch.ops.quantized.linear_prepack(weight, bias)
    finally:
        torch.backends.quantized.engine = previous


for rows, inputs, outputs in SHAPES:
    x, w, b = torch.randn(rows, inputs), torch.randn(outputs, inputs) * 0.05, torch.randn(outputs) * 0.01
    scales = w.abs().amax(1) / 127
    qw = torch.quantize_per_channel(w, scales, torch.zeros(outputs, dtype=torch.long), 0, torch.qint8)
    fbgemm, onednn = packed("fbgemm", qw, b), packed("onednn", qw, b)
    t_fbgemm = best_ms(lambda: torch.ops.quantized.linear_dynamic(x, fbgemm, True))
    t_onednn = best_ms(lambda: torch.ops.quantized.linear_dynamic(x, onednn, True))
    difference = (torch.ops.quantized.linear_dynamic(x, fbgemm, True) - torch.ops.quantized.linear_dynamic(x, onednn, True)).abs().max()
    print(f"{rows}x{inputs}x{outputs}: FBGEMM {t_fbgemm:.3f} ms, oneDNN {t_onednn:.3f} ms, "
          f"FBGEMM/oneDNN {t_fbgemm / t_onednn:.2f}, largest difference {difference:.1e}")  # fmt: skip
