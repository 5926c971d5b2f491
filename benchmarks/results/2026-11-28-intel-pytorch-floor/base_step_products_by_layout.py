import torch, time, sys
sys.path.insert(0, "/work/main/benchmarks/results/2026-11-27-intel-session-reuse-mkl-packing")
from probes import best_us
torch.set_num_threads(int(sys.argv[1]))
shapes=[(1536,512),(512,512),(512,512),(512,512),(2048,512),(512,2048)]*6
ws=[torch.randn(o,i) for o,i in shapes]; bs=[torch.randn(o) for o,i in shapes]
pk=[torch.ops.mkl._mkl_reorder_linear_weight(w, 256) for w in ws]
wt=[w.t().contiguous() for w in ws]
xs={512:torch.randn(1,512), 2048:torch.randn(1,2048)}
F=torch.nn.functional
r = {}
for rep in range(2):
  r.setdefault('linear',[]).append(best_us(lambda: [F.linear(xs[w.shape[1]], w, b) for w,b in zip(ws,bs)], 100))
  r.setdefault('mkl packed',[]).append(best_us(lambda: [torch.ops.mkl._mkl_linear(xs[w.shape[1]], p, w, b, 1) for w,p,b in zip(ws,pk,bs)], 100))
  r.setdefault('addmm in-major',[]).append(best_us(lambda: [torch.addmm(b, xs[w.shape[0]], w) for w,b in zip(wt,bs)], 100))
  r.setdefault('addmv',[]).append(best_us(lambda: [torch.addmv(b, w, xs[w.shape[1]][0]) for w,b in zip(ws,bs)], 100))
MB = sum(w.numel() for w in ws)*4/1e6
for k,v in r.items(): print(f'{k:16s} {min(v):7.0f} us  {MB/min(v)*1e3:.1f} GB/s')
