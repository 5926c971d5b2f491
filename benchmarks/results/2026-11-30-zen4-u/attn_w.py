import torch, time
from zhen.layer_steps import attend_history
from zhen.fast_generation import _row_index
torch.set_num_threads(1)
B, H, L, D = 64, 4, 120, 64
keys = torch.randn(B, H, L, 1, D); values = torch.randn(B, H, L, 1, D)
q = torch.randn(B, H, 1, D)
def t(f, n=200):
    for _ in range(10): f()
    t0 = time.perf_counter()
    for _ in range(n): f()
    return (time.perf_counter() - t0) / n * 1e6
for w in (5, 10, 20, 40):
    rows = _row_index(B * H, 1, w, L, "cpu")
    bias = torch.zeros(B, 1, 1, w)
    a = t(lambda: attend_history(q, keys[:, :, :w], values[:, :, :w], 0.125, None, rows))
    b = t(lambda: attend_history(q, keys[:, :, :w], values[:, :, :w], 0.125, None, rows, bias))
    c = t(lambda: attend_history(q, keys[:, :, :w], values[:, :, :w], 0.125, None, None))
    k = keys[:, :, :w, 0]; v = values[:, :, :w, 0]
    def mulsum():
        s = (q * k).sum(-1) * 0.125   # (B,H,w)
        p = torch.softmax(s, -1)
        return (p[..., None] * v).sum(-2)
    def bmm():
        s = torch.matmul(q, k.transpose(-1, -2)) * 0.125
        p = torch.softmax(s, -1)
        return torch.matmul(p, v)
    print(f"w {w}: rowsums {a:.0f} +bias {b:.0f} matmul {c:.0f} | mulsum {t(mulsum):.0f} bmm {t(bmm):.0f} us")
