import torch, time, sys
torch.set_num_threads(int(sys.argv[1]))
def bench(f, n=10):
    for _ in range(2): f()
    best=1e9
    for r in range(3):
        t=time.perf_counter()
        for _ in range(n): f()
        best=min(best,(time.perf_counter()-t)/n)
    return best
V,K=32000,512
w=torch.randn(V,K)
q=torch.randint(-127,128,(V,K),dtype=torch.int8)
for M in [1,4,16,64,128,256]:
    x=torch.randint(-127,128,(M,K),dtype=torch.int8)
    xf=torch.randn(M,K)
    ops=2*M*K*V/1e9
    t1=bench(lambda: torch._int_mm(x, q.t()))
    qc=q.t().contiguous()
    t2=bench(lambda: torch._int_mm(x, qc))
    # fbgemm dynamic
    qw=torch.quantize_per_tensor(w, 0.01, 0, torch.qint8)
    pk=torch.ops.quantized.linear_prepack(qw, None)
    t3=bench(lambda: torch.ops.quantized.linear_dynamic(xf, pk, False))
    print(f"M{M}: _int_mm(t view) {ops/t1:.0f} GOP/s  _int_mm(contig KxV) {ops/t2:.0f}  fbgemm dyn {ops/t3:.0f}", flush=True)
