import os, sys, time, torch, warnings
warnings.filterwarnings("ignore")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from common import zhen_model, source_batches
from zhen.fast_generation import FastDecoder
import zhen.fast_generation as fg
torch.set_num_threads(1)
model = zhen_model("base", "prenorm", "sdpa", 0.0).eval()
if sys.argv[1] == "int8":
    from zhen.quantization import quantize_dynamic
    model = quantize_dynamic(model)
b = source_batches(32, 32, 32000)[0]
with torch.inference_mode(), FastDecoder(model) as dec:
    dec.generate(b["input_ids"], b["attention_mask"], forced_bos_token_id=5, max_new_tokens=16, min_new_tokens=16)
    orig = fg.DecoderSteps.step
    walls, ops = [], []
    def step(self, tokens, position):
        if position < 6: return orig(self, tokens, position)
        from torch.profiler import profile
        t = time.perf_counter()
        with profile() as p:
            r = orig(self, tokens, position)
        walls.append(time.perf_counter() - t)
        ops.append(sum(e.cpu_time_total for e in p.events() if e.cpu_parent is None) / 1e6)
        return r
    fg.DecoderSteps.step = step
    dec.generate(b["input_ids"], b["attention_mask"], forced_bos_token_id=5, max_new_tokens=16, min_new_tokens=16)
    # without the profiler
    fg.DecoderSteps.step = orig
    ts = []
    def step2(self, tokens, position):
        t = time.perf_counter(); r = orig(self, tokens, position); ts.append(time.perf_counter() - t); return r
    fg.DecoderSteps.step = step2
    dec.generate(b["input_ids"], b["attention_mask"], forced_bos_token_id=5, max_new_tokens=16, min_new_tokens=16)
import statistics as st
print(sys.argv[1], f"step wall (profiled) {st.median(walls)*1e3:.2f} ms, ops {st.median(ops)*1e3:.2f} ms; step wall unprofiled {st.median(ts[6:])*1e3:.2f} ms")
