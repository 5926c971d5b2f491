"""The same products with oneDNN's packing made for a batch size (`_reorder_linear_weight(w, rows)`).
Usage: packing_hint.py"""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
from common import median_time
def med(f): return median_time(f, 30)
shapes = [(1536,512),(512,512),(512,512),(512,512),(2048,512),(512,2048)]*6 + [(32000,512)]
W16 = [torch.randn(*s).bfloat16() for s in shapes]
nbytes16 = sum(w.numel()*2 for w in W16)
packs = {None: [torch.ops.mkldnn._reorder_linear_weight(w, None) for w in W16]}
for hint in (1, 4, 16, 64):
    packs[hint] = [torch.ops.mkldnn._reorder_linear_weight(w, hint) for w in W16]
for r in range(2):
  for rows in (1, 2, 4, 8, 16, 32):
    xs16 = {512: torch.randn(rows, 512).bfloat16(), 2048: torch.randn(rows, 2048).bfloat16()}
    line = f"rows {rows:2d}:"
    for hint, P in packs.items():
        t = med(lambda: [torch.ops.mkldnn._linear_pointwise(xs16[w.shape[1]], p, None, "none", [], "") for w, p in zip(W16, P)])
        line += f"  hint {hint}: {t*1e3:.2f} ms ({nbytes16/t/1e9:.1f} GB/s)"
    print(line)
