import torch, time, warnings
warnings.simplefilter("ignore")
torch.set_num_threads(1)
def t(f, n=2000):
    for _ in range(50): f()
    t0 = time.perf_counter()
    for _ in range(n): f()
    return (time.perf_counter() - t0) / n * 1e6
for (k, n) in ((256, 768), (256, 1024), (1024, 256)):
    W = torch.randn(n, k) * 0.05; bias = torch.zeros(n)
    torch.backends.quantized.engine = "fbgemm"
    lin = torch.ao.nn.quantized.dynamic.Linear(k, n)
    lin.set_weight_bias(torch.quantize_per_tensor(W, 0.002, 0, torch.qint8), bias)
    packed = lin._packed_params._packed_params
    w8 = torch.fbgemm_pack_quantized_matrix(torch.quantize_per_tensor(W, 0.002, 0, torch.qint8).int_repr().float().contiguous()) if False else None
    Wb = W.bfloat16()
    for rows in (1, 4, 16):
        x = torch.randn(rows, k); xb = x.bfloat16()
        a = t(lambda: torch.ops.quantized.linear_dynamic(x, packed, True))
        b = t(lambda: torch.nn.functional.linear(x, W, bias))
        c = t(lambda: torch.nn.functional.linear(xb, Wb))
        d = t(lambda: torch.addmm(bias, x, W.t()))
        print(f"({k}->{n}) rows {rows}: int8 dyn {a:.1f}  fp32 linear {b:.1f}  bf16 linear {c:.1f}  addmm {d:.1f} us")
