import torch, time, sys
torch.set_num_threads(int(sys.argv[1]))
d=int(sys.argv[2]); L=int(sys.argv[3]); M=int(sys.argv[4])
shapes=[(3*d,d),(d,d),(d,d),(d,d),(4*d,d),(d,4*d)]*L
ws=[torch.randn(n,k) for n,k in shapes]; bs=[torch.randn(n) for n,k in shapes]
pk=[torch.ops.mkl._mkl_reorder_linear_weight(w,256) for w in ws]
xs=[torch.randn(M,k) for n,k in shapes]
def run_pk():
    for x,p,w,b in zip(xs,pk,ws,bs): torch.ops.mkl._mkl_linear(x,p,w,b,M)
def run_lin():
    for x,w,b in zip(xs,ws,bs): torch.nn.functional.linear(x,w,b)
import os
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "2026-11-27-intel-session-reuse-mkl-packing"))
from probes import best_us  # noqa: E402
bench = lambda f, n=200: best_us(f, n)  # microseconds
mb=sum(w.numel() for w in ws)*4/1e6
t1=bench(run_pk); t2=bench(run_lin)
print(f"threads {sys.argv[1]} d{d} L{L} M{M}: {len(ws)} products {mb:.1f} MB: packed {t1:.0f} us ({mb/t1*1e3:.0f} GB/s, {t1/len(ws):.1f}/product), linear {t2:.0f} us")
