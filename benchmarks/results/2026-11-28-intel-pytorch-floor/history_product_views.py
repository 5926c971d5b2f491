import torch
from probes import best_us
torch.set_num_threads(2)
@torch.jit.script
def a(q: torch.Tensor, keys: torch.Tensor, p: int):
    y = q
    for _ in range(100):
        k = keys[:, :, :p + 1]
        b, h, L, bm, d = k.shape
        y = torch.matmul(q, k.reshape(b, h, L * bm, d).transpose(-1, -2))
    return y
@torch.jit.script
def c(q: torch.Tensor, keys: torch.Tensor, p: int):
    y = q
    for _ in range(100):
        k = keys.narrow(2, 0, p + 1)
        b, h, L, bm, d = k.shape
        y = torch.bmm(q.view(b * h, -1, d), k.reshape(b * h, L * bm, d).transpose(1, 2)).view(b, h, -1, L * bm)
    return y
q = torch.randn(1, 8, 1, 64); keys = torch.randn(1, 8, 64, 1, 64)
with torch.jit.optimized_execution(False):
    print('matmul+slices', best_us(lambda: a(q, keys, 20), 100)/100, 'bmm+narrow', best_us(lambda: c(q, keys, 20), 100)/100)
    print(torch.equal(a(q, keys, 20), c(q, keys, 20)))
