"""µs of one product of a few rows: float32 nn.functional.linear (MKL), bf16 oneDNN packed with the casts, float32
oneDNN packed. Usage: few_row_products.py THREADS"""
import torch, time, statistics
import torch.nn.functional as F
import sys; torch.set_num_threads(int(sys.argv[1]))
def t(fn, n=2000):
    for _ in range(50): fn()
    xs=[]
    for _ in range(n):
        a=time.perf_counter(); fn(); xs.append(time.perf_counter()-a)
    return statistics.median(xs)*1e6
for i,o in [(256,256),(256,768),(256,1024),(1024,256),(512,2048)]:
    w = torch.randn(o,i); b = torch.randn(o); 
    w16 = torch.ops.mkldnn._reorder_linear_weight(w.bfloat16(), None); b16=b.bfloat16()
    wpk = torch.ops.mkldnn._reorder_linear_weight(w, None)
    for rows in (1,2,4):
        x = torch.randn(rows,i)
        f32 = t(lambda: F.linear(x,w,b))
        bf = t(lambda: torch.ops.mkldnn._linear_pointwise(x.bfloat16(), w16, b16, "none", [], "").float())
        pk = t(lambda: torch.ops.mkldnn._linear_pointwise(x, wpk, b, "none", [], ""))
        print(f"{i}x{o} rows {rows}: float32 F.linear {f32:6.1f} us  bf16 oneDNN packed+casts {bf:6.1f} us  float32 oneDNN packed {pk:6.1f} us", flush=True)
