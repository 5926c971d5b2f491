import torch, time, resource, sys
torch.set_num_threads(1)
from zhen.hardware import keep_freed_memory
if len(sys.argv)>1: keep_freed_memory()
from zhen.quantization import pack_for
lin = torch.nn.Linear(256, 16000, bias=False)
q = torch.ao.quantization.quantize_dynamic(torch.nn.Sequential(lin), {torch.nn.Linear}, dtype=torch.qint8)[0]
for eng in ("onednn","fbgemm"):
  pack_for(q, eng)
  for rows in (64, 128, 192, 208, 240, 256, 320):
    x = torch.randn(rows, 256)
    for _ in range(3): y=q(x); del y
    f0=resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    t=time.perf_counter(); n=20
    for _ in range(n): y=q(x); del y
    dt=(time.perf_counter()-t)/n
    f1=resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    print(eng, rows, f"{dt*1e3:.2f} ms  faults/call {(f1-f0)/n:.0f}  GMAC/s {rows*256*16000/dt/1e9:.0f}")
