import torch, time, warnings
warnings.simplefilter("ignore")
torch.set_num_threads(1)
from zhen.hardware import keep_freed_memory; keep_freed_memory()
from zhen.quantization import pack_for
def mk(i,o):
    return torch.ao.quantization.quantize_dynamic(torch.nn.Sequential(torch.nn.Linear(i,o)), {torch.nn.Linear}, dtype=torch.qint8)[0]
for (i,o) in ((256,768),(256,256),(256,1024),(1024,256)):
  q=mk(i,o)
  for M in (32, 128, 256):
    r={}
    for eng in ("fbgemm","onednn","fbgemm","onednn"):
      pack_for(q, eng); x=torch.randn(M,i)
      for _ in range(20): q(x)
      n=300; t=time.perf_counter()
      for _ in range(n): q(x)
      r[eng]=(time.perf_counter()-t)/n*1e6
    print(i,o,M, " ".join(f"{k} {v:.0f}us" for k,v in r.items()), f"onednn/fbgemm {r['onednn']/r['fbgemm']:.2f}")
