"""A base training step's bf16 products at 4,094 tokens in each operand layout, and the bf16 transpose copies.
Usage: train_gemm_layouts.py"""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
from common import median_time
def med(f): return median_time(f, 7)
bf = torch.bfloat16
def rate(flop, t): return f"{flop/t/1e9:7.0f} GFLOP/s ({t*1e3:6.2f} ms)"
A = torch.randn(2048, 2048, dtype=bf); B = torch.randn(2048, 2048, dtype=bf)
print("square 2048:", rate(2*2048**3, med(lambda: A @ B)))
for T, din, dout in ((4094, 512, 2048), (4094, 2048, 512), (4094, 512, 1536), (4094, 512, 512)):
    X = torch.randn(T, din, dtype=bf); W = torch.randn(dout, din, dtype=bf); b = torch.randn(dout, dtype=bf)
    dY = torch.randn(T, dout, dtype=bf)
    fl = 2*T*din*dout
    print(f"T={T} in={din} out={dout}")
    print("  fwd addmm(b, X, W.t())      ", rate(fl, med(lambda: torch.addmm(b, X, W.t()))))
    Wt = W.t().contiguous()
    print("  fwd addmm(b, X, Wt contig)  ", rate(fl, med(lambda: torch.addmm(b, X, Wt))))
    print("  dX = dY @ W                 ", rate(fl, med(lambda: dY @ W)))
    print("  dW = dY.t() @ X             ", rate(fl, med(lambda: dY.t() @ X)))
    dYt = dY.t().contiguous()
    print("  dW = dYt(contig) @ X        ", rate(fl, med(lambda: dYt @ X)))
    Xt = X.t().contiguous()
    print("  dW^T = Xt(contig) @ dY       ", rate(fl, med(lambda: Xt @ dY)))
    print("  dW^T = X.t() @ dY            ", rate(fl, med(lambda: X.t() @ dY)))
    print("  transpose-copy dY           ", f"{med(lambda: dY.t().contiguous())*1e3:.2f} ms")
