import torch, time, sys
torch.set_num_threads(int(sys.argv[1]))
def bench(f,n=100):
    for _ in range(5): f()
    best=1e9
    for r in range(5):
        t=time.perf_counter()
        for _ in range(n): f()
        best=min(best,(time.perf_counter()-t)/n)
    return best*1e6
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
