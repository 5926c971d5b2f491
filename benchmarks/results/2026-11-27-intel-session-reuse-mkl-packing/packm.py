import time, torch, sys
from probes import best_us
torch.set_num_threads(int(sys.argv[1]))
def t(f, n):
    return best_us(f, n)
with torch.inference_mode():
    for o, k in [(2048, 512), (512, 2048), (1536, 512), (32000, 512), (1024, 256)]:
        w = torch.randn(o, k); b = torch.randn(o)
        packs = {m: torch.ops.mkl._mkl_reorder_linear_weight(w, m) for m in (64, 256, 512)}
        od = torch.ops.mkldnn._reorder_linear_weight(w, None)
        for rows in (1, 12, 64, 128, 256):
            x = torch.randn(rows, k)
            n = max(5, int(3e8 / (rows * k * o)))
            r = {f"mkl{m}": t(lambda: torch.ops.mkl._mkl_linear(x, p, w, b, rows), n) for m, p in packs.items()}
            r["onednn"] = t(lambda: torch.ops.mkldnn._linear_pointwise(x, od, b, "none", [], ""), n)
            print(o, k, rows, " ".join(f"{a}={v:.0f}" for a, v in r.items()), flush=True)
