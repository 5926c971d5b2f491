"""Time ratio (7-bit / 8-bit activations, the calls alternating, median of the ratios; >1: 8-bit faster) of dynamic
int8 products by rows, FBGEMM's packing (the layers') and oneDNN's (the LM head's on VNNI).
Usage (repo root): int8_activation_range_speed.py [THREADS]"""
import copy, statistics, sys, time, warnings
warnings.simplefilter("ignore")
import torch
from torch import nn
from zhen.quantization import quantize_parts, pack_for
torch.set_num_threads(int(sys.argv[1]) if len(sys.argv) > 1 else 2)
op = torch.ops.quantized.linear_dynamic
ROWS = (1, 4, 16, 64, 256)
print("shape        engine  " + " ".join(f"{r:>5d}" for r in ROWS))
for i, o in [(256, 1024), (1024, 256), (512, 2048), (2048, 512), (512, 32000)]:
    q = quantize_parts(nn.Sequential(nn.Linear(i, o)), onednn_head=False)[0]
    for engine in ("fbgemm", "onednn"):
        packed = (q if engine == "fbgemm" else pack_for(copy.deepcopy(q), "onednn"))._packed_params._packed_params
        line = f"{i:4d}x{o:<6d}  {engine:7s}"
        for rows in ROWS:
            x = torch.randn(rows, i)
            for _ in range(5): op(x, packed, True); op(x, packed, False)
            ratios = []
            for _ in range(max(20, 2000 // rows)):
                t0 = time.perf_counter(); op(x, packed, True); t1 = time.perf_counter(); op(x, packed, False); t2 = time.perf_counter()
                ratios.append((t1 - t0) / (t2 - t1))
            line += f" {statistics.median(ratios):5.2f}"
        print(line, flush=True)
