import time, torch, warnings, statistics
warnings.simplefilter("ignore")
torch.set_num_threads(1)
from zhen import ZhenForConditionalGeneration
import zhen.fast_generation as fg
from zhen.quantization import quantize_dynamic
model = quantize_dynamic(ZhenForConditionalGeneration.from_pretrained("/tmp/s36/small-cpu/model", dtype=torch.float32).eval())
def t(f, n=200):
    for _ in range(20): f()
    ts = []
    for _ in range(n):
        s = time.perf_counter(); f(); ts.append(time.perf_counter() - s)
    return statistics.median(ts) * 1e3
with torch.inference_mode(), fg.FastDecoder(model, script_layers=True) as s:
    for rows, L in ((2, 4), (64, 12)):
        x = torch.randint(6, 16000, (rows, L)); m = torch.ones_like(x); m[0, -1] = 0
        mu = torch.ones_like(x)
        print(f"{rows}x{L}: padded (packed forwards) {t(lambda: s.encode(x, m)):.2f} ms, unpadded (program) {t(lambda: s.encode(x, mu)):.2f} ms", flush=True)
