import time, torch
torch.set_num_threads(1)
from torch.ao.nn.quantized.dynamic import Linear as DQ
def t(f, n=2000):
    for _ in range(200): f()
    ts = []
    for _ in range(5):
        s = time.perf_counter()
        for _ in range(n): f()
        ts.append((time.perf_counter() - s) / n * 1e6)
    return min(ts)
for (n_out, k) in [(768, 256), (256, 256), (1024, 256), (256, 1024), (16000, 256)]:
    w = torch.randn(n_out, k) / 16
    lin = torch.nn.Linear(k, n_out)
    lin.weight.data = w
    q = torch.ao.quantization.quantize_dynamic(torch.nn.Sequential(lin), {torch.nn.Linear}, dtype=torch.qint8)[0]
    packed = q._packed_params._packed_params
    scales = w.abs().amax(1) / 127
    wi8 = torch.round(w / scales[:, None]).to(torch.int8)
    wbf = w.to(torch.bfloat16)
    for rows in (1, 4):
        x = torch.randn(rows, k)
        xb = x.to(torch.bfloat16)
        with torch.inference_mode(), torch._C.DisableTorchFunctionSubclass():
            r = dict(
                fbgemm=t(lambda: torch.ops.quantized.linear_dynamic(x, packed, True)),
                w8mm=t(lambda: torch._weight_int8pack_mm(x, wi8, scales)),
                w8mm_bf16=t(lambda: torch._weight_int8pack_mm(xb, wi8, scales.bfloat16())),
                f32=t(lambda: torch.nn.functional.linear(x, w)),
                bf16=t(lambda: torch.nn.functional.linear(xb, wbf)),
            )
        print(n_out, k, rows, " ".join(f"{a} {b:.1f}" for a, b in r.items()), flush=True)
