import os, sys, time, torch, warnings
warnings.filterwarnings("ignore")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from common import zhen_model, source_batches
import zhen
from zhen.fast_generation import FastDecoder
threads, streams, beams = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
torch.set_num_threads(threads)
model = zhen_model("base", "prenorm", "sdpa", 0.0).eval()
if len(sys.argv) > 4 and sys.argv[4] == "int8":
    from zhen.quantization import quantize_dynamic
    model = quantize_dynamic(model)
n = 64 * streams
batches = source_batches(n, 32, 32000)
order = sorted(batches, key=lambda b: -b["input_ids"].numel())
with torch.inference_mode(), FastDecoder(model) as dec:
    one = lambda b: dec.generate(b["input_ids"], b["attention_mask"], forced_bos_token_id=5, num_beams=beams, max_new_tokens=32, min_new_tokens=32)
    list(dec.map(one, order, streams))
    best = min((lambda t: (list(dec.map(one, order, streams)), time.perf_counter() - t)[1])(time.perf_counter()) for _ in range(3))
print("new" if "base27" not in zhen.__file__ else "old", f"{n*32/best:.0f} tok/s", flush=True)
