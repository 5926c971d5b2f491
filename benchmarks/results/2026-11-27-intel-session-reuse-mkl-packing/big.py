import time, torch, sys
from probes import best_us
torch.set_num_threads(int(sys.argv[1]))
def t(f, n=10):
    return best_us(f, n)
with torch.inference_mode():
    for o, k in [(2048, 512), (512, 2048), (1536, 512), (1024, 256)]:
        w = torch.randn(o, k); b = torch.randn(o)
        p = torch.ops.mkl._mkl_reorder_linear_weight(w, 256)
        od = torch.ops.mkldnn._reorder_linear_weight(w, None)
        for rows in (512, 1280):
            x = torch.randn(rows, k)
            print(o, k, rows, "mkl256 %.0f linear %.0f onednn %.0f" % (t(lambda: torch.ops.mkl._mkl_linear(x, p, w, b, rows)), t(lambda: torch.nn.functional.linear(x, w, b)), t(lambda: torch.ops.mkldnn._linear_pointwise(x, od, b, "none", [], ""))), flush=True)
