import time, torch, sys
from probes import best_us
torch.set_num_threads(int(sys.argv[1]) if len(sys.argv) > 1 else 2)
shapes = [(256, 768), (256, 256), (256, 1024), (1024, 256), (512, 1536), (512, 512), (512, 2048), (2048, 512)]
def t(f, n):
    return best_us(f, n)
print("in->out rows: onednn / linear / mkl-packed (us)")
with torch.inference_mode():
    for k, o in shapes:
        w = torch.randn(o, k) * 0.05; b = torch.randn(o)
        od = torch.ops.mkldnn._reorder_linear_weight(w, None)
        line = []
        for rows in (1, 2, 4, 8, 12, 16, 24, 32, 64, 128, 256):
            x = torch.randn(rows, k)
            mk = torch.ops.mkl._mkl_reorder_linear_weight(w, rows)
            n = max(20, int(2e8 / (rows * k * o)))
            a = t(lambda: torch.ops.mkldnn._linear_pointwise(x, od, b, "none", [], ""), n)
            l = t(lambda: torch.nn.functional.linear(x, w, b), n)
            m = t(lambda: torch.ops.mkl._mkl_linear(x, mk, w, b, rows), n)
            line.append(f"{rows}:{a:.0f}/{l:.0f}/{m:.0f}")
        print(f"{k}->{o}", " ".join(line), flush=True)
