"""PyTorch's CPU softmax over the last dimension by row length (256 rows), against the same softmax computed over
dimension 0 of the transposed rows; and its backward. Run under ATEN_CPU_CAPABILITY=avx512|avx2|default."""
import torch, time
torch.set_num_threads(1)
def run(f, n=200):
    for _ in range(10): f()
    t = time.perf_counter()
    for _ in range(n): f()
    return (time.perf_counter() - t) / n * 1e6
print(torch.backends.cpu.get_cpu_capability())
out = []
for L in (2, 4, 7, 8, 9, 12, 15, 16, 17, 24, 32, 48):
    x = torch.randn(256, L)
    b = run(lambda: x.softmax(-1)); t = run(lambda: x.t().softmax(0).t())
    out.append(f"{L}:{b:.0f}/{t:.0f}")
print("L:base/transposed us (256 rows)", " ".join(out))
x = torch.randn(256, 10, requires_grad=True)
y = x.softmax(-1); g = torch.randn_like(y)
print("backward L=10", run(lambda: torch.ops.aten._softmax_backward_data(g, y, -1, torch.float32)))
x = torch.randn(256, 16); y = x.softmax(-1); g = torch.randn_like(y)
print("backward L=16", run(lambda: torch.ops.aten._softmax_backward_data(g, y, -1, torch.float32)))
