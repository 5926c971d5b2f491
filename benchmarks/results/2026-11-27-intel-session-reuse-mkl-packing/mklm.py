import time, torch
from probes import best_us
torch.set_num_threads(2)
def t(f, n=2000):
    return best_us(f, n)
w = torch.randn(1024, 256); b = torch.randn(1024)
with torch.inference_mode():
    p64 = torch.ops.mkl._mkl_reorder_linear_weight(w, 64)
    p1 = torch.ops.mkl._mkl_reorder_linear_weight(w, 1)
    print("pack sizes", p64.numel(), p1.numel(), w.numel(), p64.dtype, p64.is_mkldnn if hasattr(p64,'is_mkldnn') else None)

    for rows in (1, 12, 64, 100):
        x = torch.randn(rows, 256)
        ref = torch.nn.functional.linear(x, w, b)
        for arg in (rows, 64):
            y = torch.ops.mkl._mkl_linear(x, p64, w, b, arg)
            print(rows, "packed64 arg", arg, "maxdiff", float((y - ref).abs().max()), "us", round(t(lambda: torch.ops.mkl._mkl_linear(x, p64, w, b, arg)), 1))
