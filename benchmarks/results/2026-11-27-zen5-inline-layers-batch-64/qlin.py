import torch, time
torch.set_num_threads(1)
from torch.ao.nn.quantized.dynamic import Linear as QL
def bench(f, n=2000):
    for _ in range(50): f()
    t = time.perf_counter()
    for _ in range(n): f()
    return (time.perf_counter() - t) / n * 1e6
for (i, o) in [(16, 48), (256, 768), (256, 256), (1024, 256), (256, 16000), (512, 1536), (512, 32000)]:
    lin = torch.nn.Linear(i, o)
    q = QL(i, o); q.set_weight_bias(torch.quantize_per_tensor(lin.weight.detach(), 0.01, 0, torch.qint8), lin.bias.detach())
    packed = q._packed_params._packed_params
    x = torch.randn(32, 1, i)
    with torch.inference_mode():
        a = bench(lambda: torch.ops.quantized.linear_dynamic(x, packed, reduce_range=False))
        b = bench(lambda: torch.nn.functional.linear(x, lin.weight, lin.bias))
        xb = x.to(torch.bfloat16); wb = torch.ops.mkldnn._reorder_linear_weight(lin.weight.detach().to(torch.bfloat16), None); bb = lin.bias.detach().bfloat16()
        c = bench(lambda: torch.ops.mkldnn._linear_pointwise(xb, wb, bb, "none", [], ""))
    print(f"{i}x{o}: int8 {a:.1f} us  fp32 {b:.1f} us  bf16 packed {c:.1f} us")
