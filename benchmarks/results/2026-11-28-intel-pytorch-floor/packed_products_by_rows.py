import torch, time, sys
sys.path.insert(0, "/work/main/benchmarks/results/2026-11-27-intel-session-reuse-mkl-packing")
from probes import best_us
torch.set_num_threads(int(sys.argv[1]) if len(sys.argv)>1 else 2)
for M in (32,64,256,2048):
  for (N,K) in [(1536,512),(512,512),(2048,512),(512,2048)]:
    w=torch.randn(N,K); b=torch.randn(N); x=torch.randn(M,K)
    packed=torch.ops.mkl._mkl_reorder_linear_weight(w, 256)
    t1=1e-6*best_us(lambda: torch.ops.mkl._mkl_linear(x, packed, w, b, M), 50)
    t2=1e-6*best_us(lambda: torch.nn.functional.linear(x,w,b), 50)
    fl=2*M*N*K
    print(M,N,K, 'mklpacked %.0f GF/s'%(fl/t1/1e9), 'linear %.0f GF/s'%(fl/t2/1e9))
