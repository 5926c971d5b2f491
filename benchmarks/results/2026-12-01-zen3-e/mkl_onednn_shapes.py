import time, torch, statistics
torch.set_num_threads(2)
lp = torch.ops.mkldnn._linear_pointwise
def t(f):
    s = time.perf_counter(); f(); return time.perf_counter() - s
T = 4096
# shapes of a base training step: forward x@W^T, grad-input g@W, grad-weight g^T@x
for (M, K, N) in [(T, 256, 1024), (T, 1024, 256), (T, 256, 768), (T, 256, 256), (1024, 512, 2048), (1024, 2048, 512)]:
    a = torch.randn(M, K); w = torch.randn(N, K); g = torch.randn(M, N)
    cases = {
        "fwd": (lambda: torch.mm(a, w.t()), lambda: lp(a, w, None, "none", [], "")),
        "dx": (lambda: torch.mm(g, w), lambda: lp(g, w.t(), None, "none", [], "")),
        "dw": (lambda: torch.mm(g.t(), a), lambda: lp(g.t(), a.t(), None, "none", [], "")),
    }
    for name, (m, o) in cases.items():
        m(); o(); ratios = []; tm = []; to = []
        for i in range(12):
            x, y = (t(m), t(o)) if i % 2 else tuple(reversed((t(o), t(m))))
            tm.append(x); to.append(y); ratios.append(x / y)
        fl = 2 * M * K * N
        print(f"{(M,K,N)} {name}: mkl {fl/min(tm)/1e9:.0f} onednn {fl/min(to)/1e9:.0f} GFLOP/s  median mkl/onednn time {statistics.median(ratios):.2f}", flush=True)
