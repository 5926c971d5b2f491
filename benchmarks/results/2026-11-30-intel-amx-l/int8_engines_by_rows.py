"""FBGEMM/oneDNN time ratio of dynamic int8 products (>1: oneDNN faster) by rows, the calls alternating, median of
the ratios: a small-cpu and a base layer's products, or with `head` their LM heads (256x16000, 512x32000).
Usage (repo root): int8_engines_by_rows.py [THREADS] [head]; ONEDNN_MAX_CPU_ISA=AVX512_CORE_VNNI caps oneDNN at VNNI."""
import copy, sys, time, statistics, warnings
warnings.simplefilter("ignore")
import torch
from torch import nn
from zhen.quantization import quantize_parts, pack_for
torch.set_num_threads(int(sys.argv[1]) if len(sys.argv) > 1 else 2)
op = torch.ops.quantized.linear_dynamic
if sys.argv[2:] == ["head"]:
    shapes, ROWS, calls = [(256, 16000), (512, 32000)], (1, 2, 4, 8, 16, 32, 64, 128), (20, 2000)
else:
    shapes = [(256, 256), (256, 768), (256, 1024), (1024, 256), (512, 512), (512, 1536), (512, 2048), (2048, 512)]
    ROWS, calls = (32, 64, 96, 128, 192, 256, 384, 512, 1024), (10, 4000)
print("shape      " + " ".join(f"{r:>5d}" for r in ROWS))
for i, o in shapes:
    q = quantize_parts(nn.Sequential(nn.Linear(i, o)), onednn_head=False)[0]
    f, d = q._packed_params._packed_params, pack_for(copy.deepcopy(q), "onednn")._packed_params._packed_params
    line = f"{i:4d}x{o:5d}  "
    for rows in ROWS:
        x = torch.randn(rows, i)
        for _ in range(5): op(x, f, True); op(x, d, True)
        ratios = []
        for _ in range(max(calls[0], calls[1] // rows)):
            t0 = time.perf_counter(); op(x, f, True); t1 = time.perf_counter(); op(x, d, True); t2 = time.perf_counter()
            ratios.append((t1 - t0) / (t2 - t1))
        line += f" {statistics.median(ratios):5.2f}"
    print(line, flush=True)
