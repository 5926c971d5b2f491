import time, torch, warnings
warnings.simplefilter("ignore")
torch.set_num_threads(1)
from zhen.quantization import packing_for_engine
N, K = 16000, 256
w = torch.randn(N, K) / 16
qw = torch.quantize_per_channel(w, w.abs().amax(1) / 127, torch.zeros(N, dtype=torch.long), 0, torch.qint8)
p = {}
for eng in ("fbgemm", "onednn"):
    with packing_for_engine(eng):
        p[eng] = torch.ops.quantized.linear_prepack(qw, None)
junk = torch.randn(8 << 20)
def run(eng, x, cold, n=30):
    ts = []
    with packing_for_engine(eng), torch._C.DisableTorchFunctionSubclass():
        for _ in range(n):
            if cold: junk.mul_(1.0001)
            s = time.perf_counter(); torch.ops.quantized.linear_dynamic(x, p[eng], True); ts.append(time.perf_counter() - s)
    ts.sort(); return ts[n // 2] * 1e6
for rows in (1, 2, 4, 8, 16, 24, 32, 64):
    x = torch.randn(rows, K)
    print(rows, " ".join(f"{e}{'-cold' if c else ''} {run(e, x, c):.0f}" for e in ("fbgemm", "onednn") for c in (False, True)), flush=True)
