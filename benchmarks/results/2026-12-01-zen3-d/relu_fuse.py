# oneDNN packed float32 product (one thread) of the encoder's FFN-up shape, ReLU fused as a post-op against apart.
import time, torch
torch.set_num_threads(1)
def best(f, n=8):
    f(); b = 1e9
    for _ in range(n):
        t = time.perf_counter(); f(); b = min(b, time.perf_counter() - t)
    return b
for K, N in ((512, 2048), (2048, 512), (512, 1536)):
    w = torch.randn(N, K) * 0.02; bias = torch.randn(N)
    packed = torch.ops.mkldnn._reorder_linear_weight(w, None)
    for M in (64, 1536, 5000):
        x = torch.randn(M, K)
        fused = best(lambda: torch.ops.mkldnn._linear_pointwise(x, packed, bias, "relu", [], ""))
        plain = best(lambda: torch.ops.mkldnn._linear_pointwise(x, packed, bias, "none", [], ""))
        apart = best(lambda: torch.ops.mkldnn._linear_pointwise(x, packed, bias, "none", [], "").relu_())
        f = 2 * M * N * K / 1e9
        print(f"K={K} N={N} M={M}: fused relu {f/fused:.1f}  none {f/plain:.1f}  none+relu_ {f/apart:.1f} GFLOP/s", flush=True)
