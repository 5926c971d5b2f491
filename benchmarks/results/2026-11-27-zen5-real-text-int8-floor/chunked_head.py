import torch, time, warnings, threading, sys
warnings.simplefilter("ignore")
from zhen.hardware import keep_freed_memory; keep_freed_memory()
from zhen.quantization import pack_for
torch.set_num_threads(1)
q = torch.ao.quantization.quantize_dynamic(torch.nn.Sequential(torch.nn.Linear(256,16000,bias=False)), {torch.nn.Linear}, dtype=torch.qint8)[0]
pack_for(q, "onednn")
def work(x, rows):
    outs=[]
    for s in range(0, x.shape[0], rows):
        l = q(x[s:s+rows])
        torch.log_softmax(l, -1, out=l)
        m = l.view(l.shape[0], 250, 64).amax(-1)
        outs.append(l)
    return outs
def bench(rows, streams, n=40):
    x=[torch.randn(256,256) for _ in range(streams)]
    def loop(i):
        torch.set_num_threads(1)
        for _ in range(n): work(x[i], rows)
    for i in range(streams): loop(i) if False else None
    ths=[threading.Thread(target=loop, args=(i,)) for i in range(streams)]
    t=time.perf_counter()
    for th in ths: th.start()
    for th in ths: th.join()
    return (time.perf_counter()-t)/(n*streams)*1e3
for streams in (1,2):
  for rows in (256,128,64,32,16):
    bench(rows, streams, 5)
    print(streams, rows, f"{bench(rows, streams):.2f} ms per 256-row step (per stream-step, aggregate)")
