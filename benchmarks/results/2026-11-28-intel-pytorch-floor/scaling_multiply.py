import torch
from probes import best_us
torch.set_num_threads(2)
@torch.jit.script
def a(x: torch.Tensor, s: float):
    y = x
    for _ in range(100): y = x * s
    return y
@torch.jit.script
def b(x: torch.Tensor, s: torch.Tensor):
    y = x
    for _ in range(100): y = x * s
    return y
@torch.jit.script
def c(x: torch.Tensor, s: float):
    y = x
    for _ in range(100): y = torch.mul(x, s)
    return y
x = torch.randn(1, 8, 1, 20); s = 0.125; st = torch.tensor(s)
with torch.jit.optimized_execution(False):
    print('float', best_us(lambda: a(x, s), 100)/100, 'tensor', best_us(lambda: b(x, st), 100)/100, 'torch.mul', best_us(lambda: c(x, s), 100)/100)
    print(torch.equal(a(x,s), b(x,st)))
