import time, torch, warnings
warnings.simplefilter("ignore")
torch.set_num_threads(1)
torch.manual_seed(0)
V, D = 16000, 256
w = torch.randn(V, D) * 0.05
def best(f, n=30):
    f(); b = 1e9
    for _ in range(n):
        t = time.perf_counter(); f(); b = min(b, time.perf_counter() - t)
    return b * 1e3
print(torch.backends.quantized.supported_engines)
for eng in ("fbgemm", "x86", "onednn"):
    torch.backends.quantized.engine = eng
    wq = torch.quantize_per_channel(w, w.abs().amax(1) / 127, torch.zeros(V, dtype=torch.long), 0, torch.qint8)
    p = torch.ops.quantized.linear_prepack(wq, None)
    for R in (1, 8, 64, 128):
        x = torch.randn(R, D)
        t = best(lambda: torch.ops.quantized.linear_dynamic(x, p, True))
        print(eng, R, f"{t:.3f} ms  {2*R*V*D/t/1e6:.1f} GOP/s")
# float32 reference
for R in (64,):
    x = torch.randn(R, D)
    t = best(lambda: x @ w.T)
    print("fp32", R, f"{t:.3f} ms {2*R*V*D/t/1e6:.1f}")
