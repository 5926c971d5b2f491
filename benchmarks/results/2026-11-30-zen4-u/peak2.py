import torch, time, warnings
warnings.simplefilter("ignore")
torch.set_num_threads(1)
def t(f, n=30):
    for _ in range(3): f()
    t0 = time.perf_counter()
    for _ in range(n): f()
    return (time.perf_counter() - t0) / n
for (k, n) in ((256, 768), (256, 256), (256, 1024), (1024, 256)):
    W = torch.randn(n, k) * 0.05
    out = []
    for e in ("fbgemm", "onednn"):
        torch.backends.quantized.engine = e
        lin = torch.ao.nn.quantized.dynamic.Linear(k, n)
        lin.set_weight_bias(torch.quantize_per_tensor(W, 0.002, 0, torch.qint8), torch.zeros(n))
        x = torch.randn(700, k)
        s = t(lambda: lin(x))
        out.append(f"{e} {700*k*n/s/1e9:.0f}")
    a = torch.randint(-128, 127, (704, k), dtype=torch.int8); b = torch.randint(-128, 127, (k, n), dtype=torch.int8)
    s = t(lambda: torch._int_mm(a, b)); out.append(f"_int_mm {704*k*n/s/1e9:.0f}")
    xf = torch.randn(700, k); s = t(lambda: torch.nn.functional.linear(xf, W)); out.append(f"fp32 {700*k*n/s/1e9:.0f}")
    xb = xf.bfloat16(); Wb = W.bfloat16(); s = t(lambda: torch.nn.functional.linear(xb, Wb)); out.append(f"bf16 {700*k*n/s/1e9:.0f}")
    print((k, n), " ".join(out), "GMAC/s")
