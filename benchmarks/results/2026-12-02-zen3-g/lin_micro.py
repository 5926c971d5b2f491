import torch, time
torch.set_num_threads(1)
from zhen.session_modules import Int8Linear
import zhen.session_modules as sm, inspect
print(inspect.signature(Int8Linear.made_from))
def bench(f, n=300):
    for _ in range(20): f()
    t=time.perf_counter()
    for _ in range(n): f()
    return (time.perf_counter()-t)/n*1e6
for rows in (64, 16, 640):
    for out_f, in_f in ((768,256),(256,256),(1024,256),(256,1024)):
        lin = torch.nn.Linear(in_f, out_f)
        x = torch.randn(rows, in_f)
        q = torch.ao.nn.quantized.dynamic.Linear(in_f, out_f)
        q.set_weight_bias(torch.quantize_per_tensor(lin.weight.detach(), 0.01, 0, torch.qint8), lin.bias.detach())
        packed = torch.mkldnn_linear_pack = None
        with torch.inference_mode():
            tq = bench(lambda: q(x))
            tf = bench(lambda: lin(x))
            wt = lin.weight.detach().t().contiguous()
            tmm = bench(lambda: torch.addmm(lin.bias, x, wt))
        print(rows, out_f, in_f, f"int8 dyn {tq:7.1f} us  fp32 linear {tf:7.1f} us addmm {tmm:7.1f}  GMAC/s int8 {rows*out_f*in_f/tq/1e3:5.1f} fp32 {rows*out_f*in_f/tf/1e3:5.1f}")
