"""Read bandwidth of one-row float32 products cycled through a step-like footprint (2 threads): where the last-level
cache share of this VM ends, and what a step that reads more than it pays per byte."""
import sys
import torch
sys.path.insert(0, "/work/main/benchmarks/results/2026-11-27-intel-session-reuse-mkl-packing")
from probes import best_us

torch.set_num_threads(2)
for megabytes in (24, 48, 64, 80, 96, 112, 128, 160):
    count = megabytes * 2**20 // (2048 * 512 * 4)
    weights = [torch.randn(2048, 512) for _ in range(count)]
    x = torch.randn(1, 512)
    us = best_us(lambda: [torch.nn.functional.linear(x, w) for w in weights], 20)
    print(f"{megabytes:4d} MB of 2048x512 weights: {us:8.0f} us a pass, {megabytes * 2**20 / us / 1e3:5.1f} GB/s")
