import sys, time, torch, warnings
warnings.filterwarnings("ignore")
sys.path.insert(0, __import__("os").path.join(__import__("os").path.dirname(__file__), "..", ".."))
from common import zhen_model, source_batches
from zhen.quantization import quantize_dynamic
from zhen.fast_generation import FastDecoder
import zhen.fast_generation as fg
torch.set_num_threads(1)
model = quantize_dynamic(zhen_model("base", "prenorm", "sdpa", 0.0).eval())
dec = FastDecoder(model).__enter__()
times = {}
def timer(name, f):
    def g(*a, **k):
        t = time.perf_counter(); out = f(*a, **k); times[name] = times.get(name, 0) + time.perf_counter() - t; return out
    return g
fg.DecoderSteps.step = timer("step", fg.DecoderSteps.step)
fg.DecoderSteps.logits = timer("logits", fg.DecoderSteps.logits)
fg.DecoderSteps.reorder = timer("reorder", fg.DecoderSteps.reorder)
fg.FastDecoder.encode = timer("encode", fg.FastDecoder.encode)
src = source_batches(1024, 128, 32000)
b128 = src[3]
b32 = {k: (v[:32] if torch.is_tensor(v) else v) for k, v in b128.items()}
for name, b, beams in (("greedy128", b128, 1), ("beam4x32", b32, 4)):
    for r in range(3):
        times.clear()
        t = time.perf_counter()
        dec.generate(b["input_ids"], b["attention_mask"], forced_bos_token_id=5, num_beams=beams, max_new_tokens=32, min_new_tokens=32)
        wall = time.perf_counter() - t
    print(name, f"wall {wall*1e3:.0f} ms", {k: f"{v*1e3:.0f}" for k, v in times.items()}, f"other {1e3*(wall - sum(times.values())):.0f}")
