import torch, time
import torch.nn.functional as F
torch.set_num_threads(1)
def bench(f, n=200):
    for _ in range(20): f()
    t=time.perf_counter()
    for _ in range(n): f()
    return (time.perf_counter()-t)/n*1e6
for B, L in ((64, 8), (64, 12), (64, 20), (16, 40), (1, 12), (1, 40)):
    q, k, v = (torch.randn(B, 4, L, 64) for _ in range(3))
    def plain():
        s = torch.matmul(q, k.transpose(-1, -2)) * 0.125
        return torch.matmul(s.softmax(-1), v)
    with torch.inference_mode():
        a = bench(lambda: F.scaled_dot_product_attention(q, k, v)); b = bench(plain)
    print(B, L, f"sdpa {a:7.1f} us  matmul {b:7.1f} us  ratio {a/b:4.2f}")
