import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from best_time import best_seconds
import time, torch
torch.set_num_threads(1)
t = lambda f: best_seconds(f, 50, 5, 5) * 1e6
B, H, D, MAX = 64, 8, 64, 34
cache = torch.randn(B, H, MAX, 1, D)
for L in (8, 16, 33):
    keys = cache[:, :, :L]
    q = torch.randn(B, H, 1, D)
    a = lambda: torch.matmul(q, keys.reshape(B, H, L, D).transpose(-1, -2))
    b = lambda: (keys.reshape(B, H, L, D) * q).sum(-1)
    c = lambda: torch.einsum("bhqd,bhld->bhql", q, keys.reshape(B, H, L, D))
    kt = torch.randn(B, H, D, MAX)[..., :L]
    d = lambda: torch.matmul(q, kt)
    ref = a()
    assert torch.allclose(b()[:, :, None], ref, atol=1e-4)
    print(f"L {L}: bmm {t(a):.0f} us, mul-sum {t(b):.0f}, einsum {t(c):.0f}, bmm dim-major {t(d):.0f}")
