import sys, time, torch, resource, warnings
warnings.filterwarnings("ignore")
sys.path.insert(0, __import__("os").path.join(__import__("os").path.dirname(__file__), "..", ".."))
from common import zhen_model, source_batches
from zhen.quantization import quantize_dynamic
from zhen.fast_generation import FastDecoder
from zhen.hardware import decoding_streams
torch.set_num_threads(2)
precision, beams = sys.argv[1], int(sys.argv[2])
model = zhen_model("base", "prenorm", "sdpa", 0.0).eval()
if precision == "int8": model = quantize_dynamic(model)
dec = FastDecoder(model).__enter__()
batches = source_batches(256, 32, 32000)
order = sorted(batches, key=lambda b: -b["input_ids"].numel())
def run():
    return list(dec.map(lambda b: dec.generate(b["input_ids"], b["attention_mask"], forced_bos_token_id=5, num_beams=beams, max_new_tokens=32, min_new_tokens=32), order, 2))
run()
r0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
ts = []
for _ in range(2):
    t = time.perf_counter(); run(); ts.append(time.perf_counter() - t)
flt = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - r0) // 2
print(precision, beams, __import__("os").environ.get("ZHEN_HARDWARE", "on"), " ".join(f"{256*32/t:.0f}" for t in ts), "tok/s; minflt", flt, flush=True)
