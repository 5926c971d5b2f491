import sys, time, torch, resource
sys.path.insert(0, __import__("os").path.join(__import__("os").path.dirname(__file__), "..", ".."))
from common import zhen_model, source_batches
from zhen.quantization import quantize_dynamic
from zhen.fast_generation import FastDecoder
torch.set_num_threads(1)
model = zhen_model("base", "prenorm", "sdpa", 0.0).eval()
if sys.argv[1] == "int8": model = quantize_dynamic(model)
import os, ctypes
if os.environ.get("MALLOPT"):
    libc = ctypes.CDLL("libc.so.6")
    mm, trim = (int(v) << 20 for v in os.environ["MALLOPT"].split(","))
    print("mallopt", libc.mallopt(-3, mm), libc.mallopt(-1, trim))
dec = FastDecoder(model).__enter__()
b = source_batches(32, 32, 32000)[0]
for beams in (1, 4):
    def gen():
        dec.generate(b["input_ids"], b["attention_mask"], forced_bos_token_id=5, num_beams=beams, max_new_tokens=30, min_new_tokens=30)
    gen()
    r0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    ts = []
    for _ in range(4):
        t = time.perf_counter(); gen(); ts.append(time.perf_counter() - t)
    print(sys.argv[1], "beams", beams, "ms", " ".join(f"{x*1e3:.0f}" for x in ts), "minflt/gen", (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - r0)//4)
