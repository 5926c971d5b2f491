import torch, time, sys
torch.set_num_threads(int(sys.argv[1]))
import os
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "2026-11-27-intel-session-reuse-mkl-packing"))
from probes import best_us  # noqa: E402
bench = lambda f, n=40: best_us(f, n) / 1e6  # seconds
print("threads", torch.get_num_threads())
for K,N in [(512,1536),(512,2048),(2048,512),(512,32000)]:
  w=torch.randn(N,K); b=torch.randn(N); wt=w.t().contiguous()
  pk=torch.ops.mkl._mkl_reorder_linear_weight(w, 256)
  for M in [1,4,16,64,128,256,1280]:
    if N==32000 and M>256: continue
    x=torch.randn(M,K)
    f=2*M*K*N/1e9
    tl=bench(lambda: torch.nn.functional.linear(x,w,b))
    tp=bench(lambda: torch.ops.mkl._mkl_linear(x, pk, w, b, 256))
    ta=bench(lambda: torch.addmm(b, x, wt))
    print(f"K{K} N{N} M{M}: linear {f/tl:6.0f}  mklpacked {f/tp:6.0f}  addmm(KxN) {f/ta:6.0f}  GF/s   best/packed {tp/ta:.2f}", flush=True)
