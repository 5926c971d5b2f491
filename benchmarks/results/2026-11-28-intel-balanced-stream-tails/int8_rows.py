"""The int8 LM head's product (d_model 256 -> vocab 16k, fbgemm `linear_dynamic`) by rows per call, 1 and 2 threads:
µs per call and per row."""
import sys
import torch
sys.path.insert(0, "/work/main/benchmarks/results/2026-11-27-intel-session-reuse-mkl-packing")
from probes import best_us
from zhen.quantization import quantize_dynamic

torch.manual_seed(0)
from zhen import hardware
print("kept freed memory", hardware.keep_freed_memory())
q = quantize_dynamic(torch.nn.Sequential(torch.nn.Linear(256, 16384)))[0]
packed = q._packed_params._packed_params
with torch.inference_mode():
    for threads in (2, 1, 2):
        torch.set_num_threads(threads)
        for rows in (4, 16, 32, 64, 128, 256):
            x = torch.randn(rows, 256)
            us = best_us(lambda: torch.ops.quantized.linear_dynamic(x, packed, reduce_range=False), max(5, 2000 // rows))
            print(f"threads {threads} rows {rows:4d}: {us:8.0f} µs, {us / rows:6.1f} µs a row")
