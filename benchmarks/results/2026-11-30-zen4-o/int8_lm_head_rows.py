"""The int8 LM head's rate by rows: FBGEMM's dynamic int8 product (`quantized.linear_dynamic`, what a decoding
session's `Int8Linear` calls) of `rows` float32 rows by a vocab x width weight, one thread, freed memory kept as in a
decoding session; medians of 5 x 20 calls.

    python int8_lm_head_rows.py 16000 256
"""

import os
import statistics
import sys
import time
import warnings

import torch


warnings.simplefilter("ignore")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
from zhen import hardware  # noqa: E402


torch.set_num_threads(1)
hardware.keep_freed_memory()
vocab, width = int(sys.argv[1]), int(sys.argv[2])
quantized = torch.ao.quantization.quantize_dynamic(
    torch.nn.Sequential(torch.nn.Linear(width, vocab)), {torch.nn.Linear}, dtype=torch.qint8
)[0]
packed = quantized._packed_params._packed_params
print(f"# {vocab} x {width} int8 product, one thread")
with torch.inference_mode():
    for rows in (1, 2, 4, 8, 12, 16, 20, 24, 32, 48, 64, 128):
        x = torch.randn(rows, width)
        times = []
        for _ in range(5):
            for _ in range(3):
                torch.ops.quantized.linear_dynamic(x, packed, reduce_range=False)
            start = time.perf_counter()
            for _ in range(20):
                torch.ops.quantized.linear_dynamic(x, packed, reduce_range=False)
            times.append((time.perf_counter() - start) / 20)
        seconds = statistics.median(times)
        print(f"{rows} rows: {seconds * 1e6:.0f} us, {rows * width * vocab / seconds / 1e9:.0f} GMAC/s", flush=True)
