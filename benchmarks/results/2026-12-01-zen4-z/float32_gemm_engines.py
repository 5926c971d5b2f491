import time, torch
torch.set_num_threads(2)
def best(f, n=10):
    f(); ts = []
    for _ in range(n):
        t = time.perf_counter(); f(); ts.append(time.perf_counter() - t)
    return min(ts)
for (m, k, n) in [(2048, 2048, 2048), (4096, 256, 1024), (4096, 1024, 256), (4096, 256, 768), (4096, 256, 16000)]:
    a, w = torch.randn(m, k), torch.randn(n, k)
    tm = best(lambda: torch.mm(a, w.t()))
    ad = a.to_mkldnn() if False else a
    packed = torch.ops.mkldnn._reorder_linear_weight(w, None)
    to = best(lambda: torch.ops.mkldnn._linear_pointwise(a, packed, None, "none", [], ""))
    tr = best(lambda: (torch.ops.mkldnn._reorder_linear_weight(w, None), torch.ops.mkldnn._linear_pointwise(a, packed, None, "none", [], "")))
    f = 2 * m * k * n / 1e9
    print((m, k, n), f"MKL {f/tm:.0f}  oneDNN packed {f/to:.0f}  oneDNN incl. packing {f/tr:.0f} GFLOP/s")
