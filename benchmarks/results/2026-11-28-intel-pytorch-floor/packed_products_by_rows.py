import torch, time, sys
torch.set_num_threads(int(sys.argv[1]) if len(sys.argv)>1 else 2)
def best(f, n=50):
    for _ in range(5): f()
    b=1e9
    for _ in range(5):
        t=time.perf_counter()
        for _ in range(n): f()
        b=min(b,(time.perf_counter()-t)/n)
    return b
for M in (32,64,256,2048):
  for (N,K) in [(1536,512),(512,512),(2048,512),(512,2048)]:
    w=torch.randn(N,K); b=torch.randn(N); x=torch.randn(M,K)
    packed=torch.ops.mkl._mkl_reorder_linear_weight(w, 256)
    t1=best(lambda: torch.ops.mkl._mkl_linear(x, packed, w, b, M))
    t2=best(lambda: torch.nn.functional.linear(x,w,b))
    fl=2*M*N*K
    print(M,N,K, 'mklpacked %.0f GF/s'%(fl/t1/1e9), 'linear %.0f GF/s'%(fl/t2/1e9))
