"""One decoding step's self-attention over a one-slot cache, compiled by TorchScript: attend_history (row sums) against one SDPA call, us a call, by heads, rows and history length (not kept: see the results file)."""
import os, time, torch
import torch.nn.functional as F
from typing import Optional, Tuple
torch.set_num_threads(1)
from zhen.fast_generation import _row_index
from zhen import layer_steps as ls
def t(f, n=200):
    for _ in range(20): f()
    best = 1e9
    for _ in range(5):
        s = time.perf_counter()
        for _ in range(n): f()
        best = min(best, (time.perf_counter() - s) / n)
    return best * 1e6
@torch.jit.script
def cur10(q, kc, vc, L: int, rows: Tuple[torch.Tensor, torch.Tensor]):
    y = q
    for _ in range(10):
        y = ls.attend_history(q, kc[:, :, :L], vc[:, :, :L], 0.125, None, rows)
    return y
@torch.jit.script
def sdpa10(q, kc, vc, L: int):
    y = q
    B, H, M, b, d = kc.shape
    for _ in range(10):
        y = F.scaled_dot_product_attention(q, kc[:, :, :L].reshape(B, H, L, d), vc[:, :, :L].reshape(B, H, L, d), scale=0.125).transpose(1, 2)
    return y
with torch.jit.optimized_execution(False):
  for H in (4, 8):
    d, M = 64, 260
    for B in [int(x) for x in os.environ.get("BS", "1,2,4,8,16,32,64").split(",")]:
        out = []
        for L in [int(x) for x in os.environ.get("LS", "3,8,15,30").split(",")]:
            kc = torch.randn(B, H, M, 1, d); vc = torch.randn(B, H, M, 1, d)
            q = torch.randn(B, H, 1, d)
            rows = _row_index(B * H, 1, L, M, "cpu")
            a, b = cur10(q, kc, vc, L, rows), sdpa10(q, kc, vc, L)
            assert torch.allclose(a.reshape(-1), b.reshape(-1), atol=1e-5)
            out.append(f"L{L}: {t(lambda: cur10(q, kc, vc, L, rows), 30)/10:.0f}/{t(lambda: sdpa10(q, kc, vc, L), 30)/10:.0f}")
        print(f"H{H} B{B:2d} self current/sdpa " + "  ".join(out))
