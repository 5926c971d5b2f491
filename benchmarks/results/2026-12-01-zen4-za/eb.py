import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from best_time import best_seconds
import time, torch
torch.set_num_threads(1)
t = lambda f: best_seconds(f, 30, 5, 3) * 1e6
rows, heads, d = 64, 8, 64
for L in (28, 104):
    # cross-attention scores: keys by dimension (rows, heads, d, L): bags of d rows of length L weighted by q
    table = torch.randn(rows * heads * d, L)
    idx = torch.arange(rows * heads * d); off = torch.arange(0, rows * heads * d, d)
    w = torch.randn(rows * heads * d)
    f32 = lambda: torch.embedding_bag(table, idx, off, False, 0, False, w)[0]
    tb = table.bfloat16(); wb = w.bfloat16()
    try:
        b16 = lambda: torch.embedding_bag(tb, idx, off, False, 0, False, wb)[0]
        r = b16(); print("bf16 out dtype", r.dtype, "max rel err", float(((r.float() - f32()).abs().max() / f32().abs().max())))
        tb16 = t(b16)
    except Exception as e:
        tb16 = float('nan'); print(repr(e)[:200])
    # matmul alternative
    q = torch.randn(rows, heads, 1, d); K = torch.randn(rows, heads, d, L)
    mm = t(lambda: torch.matmul(q, K)); mmb = t(lambda: torch.matmul(q.bfloat16(), K.bfloat16()))
    print(f"L {L}: embedding_bag f32 {t(f32):.0f} us, bf16 {tb16:.0f} us; matmul f32 {mm:.0f}, bf16 {mmb:.0f}")
