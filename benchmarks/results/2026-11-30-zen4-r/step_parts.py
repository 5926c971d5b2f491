"""Per step at few rows: the compiled layers' call, the LM head's op, argmax, and everything else (Python glue)."""
import sys, time, torch, warnings, collections
warnings.simplefilter("ignore")
sys.path.insert(0, "/work/main/benchmarks")
import common
torch.set_num_threads(1)
from zhen import ZhenForConditionalGeneration, hardware
import zhen.fast_generation as fg
from zhen.quantization import quantize_dynamic
model = ZhenForConditionalGeneration.from_pretrained("/tmp/s36/small-cpu/model", dtype=torch.float32).eval()
model = quantize_dynamic(model) if sys.argv[1] == "int8" else model
acc = collections.Counter()
def timed(name, f):
    def g(*a, **k):
        t = time.perf_counter(); r = f(*a, **k); acc[name] += time.perf_counter() - t; return r
    return g
orig_run = fg.DecoderSteps.run_layer_steps
def run_layer_steps(self, *a, **k):
    prog = self.layer_steps
    if not hasattr(prog, "_timed"):
        pass
    return orig_run(self, *a, **k)
fg.DecoderSteps.run_layer_steps = timed("run_layer_steps(all)", fg.DecoderSteps.run_layer_steps)
fg.argmax = timed("argmax", fg.argmax)
fg.DecoderSteps.logits = timed("logits", fg.DecoderSteps.logits)
fg.DecoderSteps.embed_step = timed("embed_step", fg.DecoderSteps.embed_step)
fg.DecoderSteps.next_tokens = timed("next_tokens(all)", fg.DecoderSteps.next_tokens)
fg.DecoderSteps.step = timed("step(all)", fg.DecoderSteps.step)
import zhen.layer_steps as ls
orig_interp = ls.interpreted
for rows in (1, 4, 16, 64):
    x = torch.randint(6, 16000, (rows, 20), generator=torch.Generator().manual_seed(rows)); x[:, 0] = 4; x[:, -1] = 2
    kw = dict(input_ids=x, attention_mask=torch.ones_like(x), num_beams=1, max_new_tokens=80, min_new_tokens=80)
    with torch.inference_mode(), fg.FastDecoder(model, script_layers=True) as s:
        for _ in range(3): s.generate(**kw)
        acc.clear()
        t = time.perf_counter()
        for _ in range(10): s.generate(**kw)
        total = time.perf_counter() - t
    n = 800
    print(f"rows {rows}: generate {total/n*1e6:.0f} us a step; " + ", ".join(f"{k} {v/n*1e6:.0f}" for k, v in acc.items()))
