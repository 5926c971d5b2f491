"""8-bit / 7-bit activation time of FBGEMM dynamic int8 products from 128 rows (8-bit called first in each pair).
Usage (repo root): int8_activation_range_speed.py THREADS"""
import torch, time, statistics, warnings, sys
warnings.simplefilter("ignore")
from torch import nn
from zhen.quantization import quantize_parts
torch.set_num_threads(int(sys.argv[1]))
op = torch.ops.quantized.linear_dynamic
for i, o in [(512, 2048), (512, 1536), (512, 4096), (256, 1024), (2048, 512)]:
    q = quantize_parts(nn.Sequential(nn.Linear(i, o)), onednn_head=False)[0]
    p = q._packed_params._packed_params
    line = f"{i}x{o}"
    for rows in (128, 192, 256, 320, 512, 1024):
        x = torch.randn(rows, i)
        for _ in range(5): op(x, p, False); op(x, p, True)
        r = []
        for _ in range(max(20, 4000 // rows)):
            t0 = time.perf_counter(); op(x, p, False); t1 = time.perf_counter(); op(x, p, True); t2 = time.perf_counter()
            r.append((t1 - t0) / (t2 - t1))
        line += f" {rows}:{statistics.median(r):.2f}"
    print(line, "(8-bit time / 7-bit time)", flush=True)
