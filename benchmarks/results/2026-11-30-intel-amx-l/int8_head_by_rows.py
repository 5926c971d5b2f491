"""FBGEMM/oneDNN time ratio of the int8 LM head products of small-cpu (256x16000) and base (512x32000) by rows (>1:
oneDNN faster), the calls alternating. Usage (repo root): int8_head_by_rows.py [THREADS]"""
import copy, sys, time, statistics, warnings
warnings.simplefilter("ignore")
import torch
from torch import nn
from zhen.quantization import quantize_parts, pack_for
torch.set_num_threads(int(sys.argv[1]) if len(sys.argv) > 1 else 2)
op = torch.ops.quantized.linear_dynamic
ROWS = (1, 2, 4, 8, 16, 32, 64, 128)
print("shape        " + " ".join(f"{r:>5d}" for r in ROWS))
for i, o in [(256, 16000), (512, 32000)]:
    q = quantize_parts(nn.Sequential(nn.Linear(i, o)), onednn_head=False)[0]
    f, d = q._packed_params._packed_params, pack_for(copy.deepcopy(q), "onednn")._packed_params._packed_params
    line = f"{i:4d}x{o:5d}  "
    for rows in ROWS:
        x = torch.randn(rows, i)
        for _ in range(5): op(x, f, True); op(x, d, True)
        ratios = []
        for _ in range(max(20, 2000 // rows)):
            t0 = time.perf_counter(); op(x, f, True); t1 = time.perf_counter(); op(x, d, True); t2 = time.perf_counter()
            ratios.append((t1 - t0) / (t2 - t1))
        line += f" {statistics.median(ratios):5.2f}"
    print(line, flush=True)
