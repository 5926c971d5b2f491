"""Training's softmax of a group's scores (rows x heads, width, width) forward and backward, two threads: PyTorch's softmax against hardware.row_softmax (not used in training)."""
import time, torch
torch.set_num_threads(2)
from zhen import hardware
def t(f, n=50):
    for _ in range(5): f()
    best = 1e9
    for _ in range(5):
        s = time.perf_counter()
        for _ in range(n): f()
        best = min(best, (time.perf_counter() - s) / n)
    return best * 1e6
for dtype in (torch.bfloat16, torch.float32):
    for rows, heads, W in ((64, 4, 6), (64, 4, 11), (32, 4, 15), (16, 8, 24), (128, 4, 9)):
        x = torch.randn(rows * heads, W, W, dtype=dtype, requires_grad=True)
        g = torch.randn(rows * heads, W, W)
        def old():
            y = torch.nn.functional.softmax(x, dim=-1, dtype=torch.float32).to(dtype); y.backward(g.to(dtype))
        def new():
            y = hardware.row_softmax(x).to(dtype); y.backward(g.to(dtype))
        print(dtype, rows, heads, W, f"fwd+bwd old {t(old):.0f} us new {t(new):.0f} us")
