import torch, time, sys
torch.set_num_threads(int(sys.argv[1]))
import os
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "2026-11-27-intel-session-reuse-mkl-packing"))
from probes import best_us  # noqa: E402
bench = lambda f, n=40: best_us(f, n) / 1e6  # seconds
K,N=512,2048
w=torch.randn(N,K); b=torch.randn(N); wt=w.t().contiguous()
pks={p: torch.ops.mkl._mkl_reorder_linear_weight(w, p) for p in (1,16,64,256)}
print("threads", sys.argv[1])
for M in [1,4,16,64,256]:
    x=torch.randn(M,K); f=2*M*K*N/1e9
    row=[f"M{M}:"]
    for p,pk in pks.items():
        row.append(f"pk{p} {f/bench(lambda: torch.ops.mkl._mkl_linear(x, pk, w, b, M)):.0f}")
    row.append(f"inputmajor {f/bench(lambda: torch.addmm(b, x, wt)):.0f}")
    print("  ".join(row))
