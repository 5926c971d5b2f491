import torch, time
from torch.ao.nn.quantized.dynamic import Linear as QL
def best(f, n=20):
    f(); f()
    b = 1e9
    for _ in range(n):
        t = time.perf_counter(); f(); b = min(b, time.perf_counter() - t)
    return b * 1e3
torch.manual_seed(0)
V, D = 16000, 256
w = torch.randn(V, D) * 0.05
for eng in ("fbgemm", "onednn"):
    torch.backends.quantized.engine = eng
    qw = torch.quantize_per_channel(w, w.abs().amax(1) / 127, torch.zeros(V, dtype=torch.long), 0, torch.qint8)
    packed = torch.ops.quantized.linear_prepack(qw, torch.zeros(V))
    for threads in (1, 2):
        torch.set_num_threads(threads)
        for rows in (64, 16):
            x = torch.randn(rows, D)
            t = best(lambda: torch.ops.quantized.linear_dynamic(x, packed, True))
            # chunks of the vocabulary
            parts = [torch.ops.quantized.linear_prepack(qw[i:i+2000], torch.zeros(2000)) for i in range(0, V, 2000)] if False else None
            print(eng, "threads", threads, "rows", rows, "%.2f ms  %.1f GMAC/s" % (t, rows*V*D/t/1e6))
torch.set_num_threads(2)
wp = torch.ops.mkldnn._reorder_linear_weight(w, None)
for threads in (1, 2):
    torch.set_num_threads(threads)
    for rows in (64, 16):
        x = torch.randn(rows, D)
        t = best(lambda: torch.ops.mkldnn._linear_pointwise(x, wp, None, "none", [], ""))
        print("fp32 onednn threads", threads, "rows", rows, "%.2f ms  %.1f GMAC/s" % (t, rows*V*D/t/1e6))
