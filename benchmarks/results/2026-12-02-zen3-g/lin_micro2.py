import torch, time, warnings
warnings.simplefilter("ignore")
torch.set_num_threads(1)
from zhen import hardware
def bench(f, n=2000):
    for _ in range(50): f()
    t=time.perf_counter()
    for _ in range(n): f()
    return (time.perf_counter()-t)/n*1e6
for out_f, in_f in ((256,256),(768,256)):
    q = torch.ao.nn.quantized.dynamic.Linear(in_f, out_f)
    packed = q._packed_params._packed_params
    for rows in (1, 4, 16, 64):
        x = torch.randn(rows, in_f)
        with torch.inference_mode():
            t1 = bench(lambda: hardware.packed_product(torch.ops.quantized.linear_dynamic, x, packed, True))
            t2 = bench(lambda: torch.ops.quantized.linear_dynamic(x, packed, True))
            t3 = bench(lambda: x.aminmax())
        print(out_f, in_f, rows, f"packed_product {t1:6.1f}  direct {t2:6.1f}  aminmax {t3:5.1f} us")
