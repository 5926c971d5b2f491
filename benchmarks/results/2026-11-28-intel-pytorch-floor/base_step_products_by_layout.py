import torch, time, sys
torch.set_num_threads(int(sys.argv[1]))
def best(f, n=100):
    for _ in range(10): f()
    b=1e9
    for _ in range(5):
        t=time.perf_counter()
        for _ in range(n): f()
        b=min(b,(time.perf_counter()-t)/n)
    return b*1e6
shapes=[(1536,512),(512,512),(512,512),(512,512),(2048,512),(512,2048)]*6
ws=[torch.randn(o,i) for o,i in shapes]; bs=[torch.randn(o) for o,i in shapes]
pk=[torch.ops.mkl._mkl_reorder_linear_weight(w, 256) for w in ws]
wt=[w.t().contiguous() for w in ws]
xs={512:torch.randn(1,512), 2048:torch.randn(1,2048)}
F=torch.nn.functional
r = {}
for rep in range(2):
  r.setdefault('linear',[]).append(best(lambda: [F.linear(xs[w.shape[1]], w, b) for w,b in zip(ws,bs)]))
  r.setdefault('mkl packed',[]).append(best(lambda: [torch.ops.mkl._mkl_linear(xs[w.shape[1]], p, w, b, 1) for w,p,b in zip(ws,pk,bs)]))
  r.setdefault('addmm in-major',[]).append(best(lambda: [torch.addmm(b, xs[w.shape[0]], w) for w,b in zip(wt,bs)]))
  r.setdefault('addmv',[]).append(best(lambda: [torch.addmv(b, w, xs[w.shape[1]][0]) for w,b in zip(ws,bs)]))
MB = sum(w.numel() for w in ws)*4/1e6
for k,v in r.items(): print(f'{k:16s} {min(v):7.0f} us  {MB/min(v)*1e3:.1f} GB/s')
