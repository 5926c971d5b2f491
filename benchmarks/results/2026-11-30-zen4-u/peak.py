import torch, time
torch.set_num_threads(1)
def t(f, n=20):
    for _ in range(3): f()
    t0 = time.perf_counter()
    for _ in range(n): f()
    return (time.perf_counter() - t0) / n
W = torch.randn(16384, 256)
lin = torch.ao.nn.quantized.dynamic.Linear(256, 16384)
lin.set_weight_bias(torch.quantize_per_tensor(W, 0.01, 0, torch.qint8), None)
for e in ("fbgemm", "onednn"):
    torch.backends.quantized.engine = e
    lin = torch.ao.nn.quantized.dynamic.Linear(256, 16384)
    lin.set_weight_bias(torch.quantize_per_tensor(W, 0.01, 0, torch.qint8), None)
    for rows in (64, 256, 1024):
        x = torch.randn(rows, 256)
        s = t(lambda: lin(x))
        print(e, rows, f"{rows*16384*256/s/1e9:.0f} GMAC/s")
a = torch.randint(-128, 127, (1024, 256), dtype=torch.int8); b = torch.randint(-128, 127, (256, 16384), dtype=torch.int8)
s = t(lambda: torch._int_mm(a, b)); print("_int_mm 1024", f"{1024*16384*256/s/1e9:.0f} GMAC/s")
