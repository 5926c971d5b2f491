import time, torch, threading
torch.set_num_threads(2)
w = torch.randn(2048, 512); b = torch.randn(2048)
mk = torch.ops.mkl._mkl_reorder_linear_weight(w, 256)
od = torch.ops.mkldnn._reorder_linear_weight(w, None)
ws2 = torch.randn(2048, 512); mk2 = torch.ops.mkl._mkl_reorder_linear_weight(ws2, 256); od2 = torch.ops.mkldnn._reorder_linear_weight(ws2, None)
def worker(kind, rows, n, out, i):
    torch.set_num_threads(1)
    x = torch.randn(rows, 512)
    W, M, O = (w, mk, od) if i == 0 else (ws2, mk2, od2)
    f = (lambda: torch.ops.mkl._mkl_linear(x, M, W, b, rows)) if kind == "mkl" else (lambda: torch.ops.mkldnn._linear_pointwise(x, O, b, "none", [], ""))
    for _ in range(5): f()
    t = time.perf_counter()
    for _ in range(n): f()
    out[i] = time.perf_counter() - t
with torch.inference_mode():
    for rows in (8, 64, 256):
        n = max(20, int(2e9 / (rows * 512 * 2048)))
        for rep in range(2):
            for kind in ("onednn", "mkl"):
                out = [0, 0]
                th = [threading.Thread(target=worker, args=(kind, rows, n, out, i)) for i in range(2)]
                [x.start() for x in th]; [x.join() for x in th]
                one = [0]
                worker(kind, rows, n, one, 0)
                print(rows, kind, "2 threads concurrently: us/product", round(max(out) / n * 1e6), " alone:", round(one[0] / n * 1e6), flush=True)
