import torch, time, warnings, sys, copy
warnings.simplefilter("ignore")
torch.set_num_threads(1)
import sys as _s
if "keep" in _s.argv:
    from zhen import hardware as _h; print("kept:", _h.keep_freed_memory())
from zhen.quantization import pack_for
def bench(f, n=20):
    for _ in range(3): f()
    t = time.perf_counter()
    for _ in range(n): f()
    return (time.perf_counter() - t) / n * 1e6
for k, n in [(256, 768), (256, 256), (256, 1024), (1024, 256), (256, 512)]:
    lin = torch.nn.Sequential(torch.nn.Linear(k, n))
    h = torch.ao.quantization.quantize_dynamic(lin, {torch.nn.Linear}, dtype=torch.qint8)[0]
    fb = pack_for(copy.deepcopy(h), "fbgemm"); on = pack_for(copy.deepcopy(h), "onednn")
    for rows in (64, 384, 768, 1536):
        x = torch.randn(rows, k)
        a = [(bench(lambda: on(x)), bench(lambda: fb(x))) for r in range(3)]
        o, f = min(v[0] for v in a), min(v[1] for v in a)
        print(f"{k}x{n} rows {rows:4d}: onednn {o:7.0f} us  fbgemm {f:7.0f} us  onednn speed {f/o:.2f}")
