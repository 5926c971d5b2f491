# Float32 products of the small-cpu recipe's step (about 700 rows, d_model 256, FFN 1024) on 1 and 2 threads:
# oneDNN's linear (forward, input gradient) and PyTorch's mm (weight gradient), GFLOP/s.
import time, torch
def rate(f, flops, reps=30):
    for _ in range(3): f()
    best = 1e9
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(reps): f()
        best = min(best, (time.perf_counter() - t) / reps)
    return flops / best / 1e9
M = 700
for threads in (1, 2, 1, 2):
    torch.set_num_threads(threads)
    out = []
    for K, N in ((256, 768), (256, 256), (256, 1024), (1024, 256), (256, 16000)):
        x, w = torch.randn(M, K), torch.randn(N, K)
        p = torch.ops.mkldnn._reorder_linear_weight(w, None)
        fl = 2 * M * K * N
        lin = rate(lambda: torch.ops.mkldnn._linear_pointwise(x, p, None, "none", [], ""), fl)
        g = torch.randn(M, N)
        wg = rate(lambda: torch.mm(g.t(), x), fl)
        out.append(f"{K}x{N}: lin {lin:5.1f} wgrad {wg:5.1f}")
    print(threads, " | ".join(out), flush=True)
