import time, torch
torch.set_num_threads(2)
def t(f, n=500):
    for _ in range(10): f()
    best = 1e9
    for _ in range(3):
        a = time.perf_counter()
        for _ in range(n): f()
        best = min(best, (time.perf_counter() - a) / n * 1e6)
    return best
with torch.inference_mode():
    for o, k in [(2048, 512), (256, 1024), (32000, 512)]:
        w = torch.randn(o, k); b = torch.randn(o)
        packs = {m: torch.ops.mkl._mkl_reorder_linear_weight(w, m) for m in (1, 64)}
        for rows in (1, 12, 64):
            x = torch.randn(rows, k); ref = torch.nn.functional.linear(x, w, b)
            r = []
            for m, p in packs.items():
                y = torch.ops.mkl._mkl_linear(x, p, w, b, rows)
                r.append(f"pack{m}: diff {float((y-ref).abs().max()):.1e} {t(lambda: torch.ops.mkl._mkl_linear(x, p, w, b, rows), 200 if o > 10000 else 1000):.0f}us")
            od = torch.ops.mkldnn._reorder_linear_weight(w, None)
            r.append(f"onednn {t(lambda: torch.ops.mkldnn._linear_pointwise(x, od, b, 'none', [], ''), 200 if o > 10000 else 1000):.0f}us")
            print(o, k, rows, " | ".join(r))
from zhen import ZhenConfig
