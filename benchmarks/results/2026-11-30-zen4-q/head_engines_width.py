import torch, time, warnings, sys
warnings.simplefilter("ignore")
torch.set_num_threads(1)
from zhen.quantization import quantize_dynamic, pack_for
import copy
k, n = int(sys.argv[1]), int(sys.argv[2])
lin = torch.nn.Sequential(torch.nn.Linear(k, n))
q = torch.ao.quantization.quantize_dynamic(lin, {torch.nn.Linear}, dtype=torch.qint8)
from zhen.quantization import DynamicInt8Linear
h = q[0]
fb = pack_for(copy.deepcopy(h), "fbgemm"); on = pack_for(copy.deepcopy(h), "onednn")
def bench(f, n=30):
    for _ in range(5): f()
    t = time.perf_counter()
    for _ in range(n): f()
    return (time.perf_counter() - t) / n * 1e6
for rows in (1, 4, 8, 16, 24, 32, 64):
    x = torch.randn(rows, k)
    a = [(bench(lambda: on(x)), bench(lambda: fb(x))) for r in range(3)]
    o, f = min(v[0] for v in a), min(v[1] for v in a)
    print(f"{k}x{n} rows {rows:3d}: onednn {o:7.0f} us  fbgemm {f:7.0f} us  fbgemm/onednn speed {o/f:.2f}")
