"""The dynamic int8 products of a `small-cpu` layer and of a base layer at 1-256 rows, packed for FBGEMM and for
oneDNN. Usage: int8_engines.py"""
import copy, os, sys, warnings
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
warnings.simplefilter("ignore")
import torch
from torch import nn
from common import median_time
from zhen.quantization import quantize_parts, pack_for
def med(f): return median_time(f, 200, warmup=10) * 1e6
for shapes in ([(256, 768), (256, 256), (256, 1024), (1024, 256)], [(512, 1536), (512, 512), (512, 2048), (2048, 512)]):
    for rows in (1, 4, 16, 64, 256):
        line = f"rows {rows:3d}:"
        tot = {"fbgemm": 0.0, "onednn": 0.0}
        for i, o in shapes:
            lin = nn.Sequential(nn.Linear(i, o))
            q = quantize_parts(lin, onednn_head=False)[0]
            q2 = pack_for(copy.deepcopy(q), "onednn")
            x = torch.randn(rows, i)
            for name, m in (("fbgemm", q), ("onednn", q2)):
                tot[name] += med(lambda: torch.ops.quantized.linear_dynamic(x, m._packed_params._packed_params, False))
        print(f"{shapes[0]}.. rows {rows:3d}: fbgemm {tot['fbgemm']:.0f} us, onednn {tot['onednn']:.0f} us, fbgemm/onednn {tot['fbgemm']/tot['onednn']:.2f}")
