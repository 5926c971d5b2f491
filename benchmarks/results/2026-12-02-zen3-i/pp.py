# Single-thread float32 products of transformer-base decoder (M=64) and encoder (M=1536) shapes, the 6 layers' weights in turn (sweep) or one weight again and again; then decoder shapes by rows.
import torch, time
torch.set_num_threads(1)
def run(M, shapes, packer, reps=5):
    ws = [torch.randn(N, K) for _ in range(6) for K, N in shapes]
    xs = {K: torch.randn(M, K) for K, N in shapes}
    if packer == "onednn":
        ps = [torch.ops.mkldnn._reorder_linear_weight(w, None) for w in ws]
        f = lambda i: torch.ops.mkldnn._linear_pointwise(xs[ws[i].shape[1]], ps[i], None, "none", [], "")
    elif packer == "mkl":
        ps = [torch.ops.mkl._mkl_reorder_linear_weight(w, 256) for w in ws]
        f = lambda i: torch.ops.mkl._mkl_linear(xs[ws[i].shape[1]], ps[i], ws[i], None, M)
    else:
        f = lambda i: torch.nn.functional.linear(xs[ws[i].shape[1]], ws[i])
    flops = sum(2 * M * w.shape[0] * w.shape[1] for w in ws)
    best = 1e9
    for r in range(reps):
        t = time.perf_counter()
        for i in range(len(ws)): f(i)
        best = min(best, time.perf_counter() - t)
    one = 1e9  # same weight repeatedly
    for r in range(reps):
        t = time.perf_counter()
        for i in range(len(ws)): f(0)
        one = min(one, time.perf_counter() - t)
    return flops / best / 1e9, 2 * M * ws[0].shape[0] * ws[0].shape[1] * len(ws) / one / 1e9
dec = [(512, 1536), (512, 512), (512, 512), (512, 2048), (2048, 512)]
enc = [(512, 1536), (512, 512), (512, 2048), (2048, 512)]
for rep in range(3):
  for M, shapes in ((64, dec), (512, enc), (1536, enc)):
    print(M, {p: tuple(round(v,1) for v in run(M, shapes, p)) for p in ("onednn", "mkl", "plain")}, flush=True)
