"""The 37 products of a base decoder step (77 MB of bf16 weights) at 1, 4 and 16 rows, packed bf16, plain bf16
and float32, against a plain read of the same bytes. Usage: few_row_bandwidth.py"""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
from common import median_time
def med(f): return median_time(f, 30)
# a set of weights as the base decoder: 6 layers x (qkv 1536x512, out 512x512, q 512x512, out 512x512, fc1 2048x512, fc2 512x2048) + head 32000x512
shapes = [(1536,512),(512,512),(512,512),(512,512),(2048,512),(512,2048)]*6 + [(32000,512)]
W32 = [torch.randn(*s) for s in shapes]
W16 = [w.bfloat16() for w in W32]
P16 = [torch.ops.mkldnn._reorder_linear_weight(w, None) for w in W16]
nbytes16 = sum(w.numel()*2 for w in W16)
for rows in (1, 4, 16):
    x32 = torch.randn(rows, 512); x16 = x32.bfloat16()
    xs32 = {512: x32, 2048: torch.randn(rows, 2048)}; xs16 = {k: v.bfloat16() for k, v in xs32.items()}
    t_packed = med(lambda: [torch.ops.mkldnn._linear_pointwise(xs16[w.shape[1]], p, None, "none", [], "") for w, p in zip(W16, P16)])
    t_plain16 = med(lambda: [torch.nn.functional.linear(xs16[w.shape[1]], w) for w in W16])
    t_f32 = med(lambda: [torch.nn.functional.linear(xs32[w.shape[1]], w) for w in W32])
    print(f"rows {rows}: packed bf16 {t_packed*1e3:.2f} ms ({nbytes16/t_packed/1e9:.1f} GB/s), plain bf16 {t_plain16*1e3:.2f} ms ({nbytes16/t_plain16/1e9:.1f} GB/s), f32 {t_f32*1e3:.2f} ms ({2*nbytes16/t_f32/1e9:.1f} GB/s)")
big = torch.cat([w.reshape(-1) for w in W16])
t = med(lambda: big.sum()); print(f"sum over bf16 weights {t*1e3:.2f} ms {nbytes16/t/1e9:.1f} GB/s")
big32 = torch.cat([w.reshape(-1) for w in W32])
t = med(lambda: big32.sum()); print(f"sum over f32 weights {t*1e3:.2f} ms {2*nbytes16/t/1e9:.1f} GB/s")
i16 = big.view(torch.int16)
t = med(lambda: i16.max()); print(f"int16 max over bf16 weights {t*1e3:.2f} ms {nbytes16/t/1e9:.1f} GB/s")
