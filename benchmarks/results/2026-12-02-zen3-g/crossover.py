import torch, time, warnings, sys
warnings.simplefilter("ignore")
torch.set_num_threads(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
from zhen.quantization import packing_for_engine
def bench(f, n):
    for _ in range(5): f()
    best = 1e9
    for _ in range(3):
        t=time.perf_counter()
        for _ in range(n): f()
        best = min(best, (time.perf_counter()-t)/n*1e6)
    return best
print("threads", torch.get_num_threads())
shapes = [(768,256),(256,256),(1024,256),(256,1024),(1536,512),(512,512),(2048,512),(512,2048)]
rows_list = (32, 64, 96, 128, 192, 256, 384, 640, 1536)
print("out×in  " + " ".join(f"{r:>6}" for r in rows_list), "  (fbgemm time / onednn time)")
for out_f, in_f in shapes:
    w = torch.quantize_per_channel(torch.randn(out_f, in_f)*0.05, torch.full((out_f,),0.001), torch.zeros(out_f, dtype=torch.long), 0, torch.qint8)
    b = torch.randn(out_f)
    fb = torch.ops.quantized.linear_prepack(w, b)
    with packing_for_engine("onednn"):
        on = torch.ops.quantized.linear_prepack(w, b)
    ratios = []
    for rows in rows_list:
        x = torch.randn(rows, in_f)
        n = max(5, int(2e7 / (rows * out_f * in_f) * 20))
        with torch.inference_mode():
            a = bench(lambda: torch.ops.quantized.linear_dynamic(x, fb, True), n)
            c = bench(lambda: torch.ops.quantized.linear_dynamic(x, on, True), n)
        ratios.append(a / c)
    print(f"{out_f}×{in_f}".ljust(9) + " ".join(f"{r:6.2f}" for r in ratios))
