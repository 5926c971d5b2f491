import torch, time, sys
torch.set_num_threads(int(sys.argv[1]))
import os
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "2026-11-27-intel-session-reuse-mkl-packing"))
from probes import best_us  # noqa: E402
bench = lambda f, n=100: best_us(f, n)  # microseconds
for n,k in [(768,256),(256,256),(1024,256),(256,1024),(1536,512),(512,512),(2048,512),(512,2048)]:
    copies = max(4, int(40e6 // (n*k*4)))  # ~40 MB cycled: out of L2
    ws=[torch.randn(n,k) for _ in range(copies)]; b=torch.randn(n)
    pk=[torch.ops.mkl._mkl_reorder_linear_weight(w,256) for w in ws]
    row=[f"{k}->{n}:"]
    for M in (1,2,4,8,16,32):
        x=torch.randn(M,k)
        tp=bench(lambda: [torch.ops.mkl._mkl_linear(x,p,w,b,M) for p,w in zip(pk,ws)])/copies
        tl=bench(lambda: [torch.nn.functional.linear(x,w,b) for w in ws])/copies
        row.append(f"M{M} {tp:.0f}/{tl:.0f}{'*' if tl<tp*0.95 else ''}")
    print("  ".join(row), flush=True)
