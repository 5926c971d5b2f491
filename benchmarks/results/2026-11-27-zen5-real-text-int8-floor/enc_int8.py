import torch, time, random, warnings
warnings.simplefilter("ignore")
torch.set_num_threads(1)
from zhen.quantization import pack_for
def mk(i,o):
    return torch.ao.quantization.quantize_dynamic(torch.nn.Sequential(torch.nn.Linear(i,o)), {torch.nn.Linear}, dtype=torch.qint8)[0]
for (i,o) in ((256,768),(256,1024),(1024,256),(256,256),(256,512)):
  q=mk(i,o)
  for eng in ("fbgemm","onednn"):
    pack_for(q, eng)
    for vary in (False, True):
      Ms=[random.randint(600,1100) for _ in range(30)] if vary else [994]*30
      xs=[torch.randn(M,i) for M in Ms]
      for x in xs[:3]: q(x)
      t=time.perf_counter()
      for x in xs: q(x)
      dt=time.perf_counter()-t
      macs=sum(M*i*o for M in Ms)
      print(i,o,eng,"varyM" if vary else "M=994", f"{macs/dt/1e9:.0f} GMAC/s")
