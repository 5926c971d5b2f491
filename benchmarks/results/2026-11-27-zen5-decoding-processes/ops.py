import os, sys, torch, warnings, collections
warnings.filterwarnings("ignore")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from common import zhen_model, source_batches
from zhen.quantization import quantize_dynamic
from zhen.fast_generation import FastDecoder
import zhen.fast_generation as fg
torch.set_num_threads(1)
model = quantize_dynamic(zhen_model("base", "prenorm", "sdpa", 0.0).eval())
b = source_batches(32, 32, 32000)[0]
beams = int(sys.argv[1])
with torch.inference_mode(), FastDecoder(model) as dec:
    dec.generate(b["input_ids"], b["attention_mask"], forced_bos_token_id=5, num_beams=beams, max_new_tokens=8, min_new_tokens=8)
    orig = fg.DecoderSteps.step
    rec = {}
    def step(self, *a, **k):
        if rec.get("done"): return orig(self, *a, **k)
        from torch.profiler import profile
        with profile() as p:
            r = orig(self, *a, **k)
        if k.get("position", a[1] if len(a) > 1 else 0) >= 3:
            rec["done"] = True
            ev = [e for e in p.events() if e.cpu_parent is None]
            c = collections.Counter(e.name for e in ev)
            print(len(ev), "top-level calls"); 
            for n, k_ in c.most_common(): print(f"{k_:4d} {n}")
            print(" ".join(e.name.replace("aten::", "") for e in ev[:60]))
        return r
    fg.DecoderSteps.step = step
    dec.generate(b["input_ids"], b["attention_mask"], forced_bos_token_id=5, num_beams=beams, max_new_tokens=8, min_new_tokens=8)
