import sys, time, torch, warnings, os, collections
warnings.simplefilter("ignore")
torch.set_num_threads(1)
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast
import zhen.layer_steps as ls
import zhen.fast_generation as fg
from zhen.quantization import quantize_dynamic
M="/tmp/rt/small/model"
model = ZhenForConditionalGeneration.from_pretrained(M, dtype=torch.float32).eval()
tok = ZhenTokenizerFast.from_pretrained(M)
q = quantize_dynamic(model)
tok.src_lang, tok.tgt_lang = "en","zh"
text = "The ecological footprint of a country is closely related to its level of economic development."
T=collections.defaultdict(float)
def timed(name, f):
    def g(*a, **k):
        t=time.perf_counter(); r=f(*a, **k); T[name]+=time.perf_counter()-t; return r
    return g
ls.attend_history = timed("attend_history(self)", ls.attend_history)
ls.attend = timed("attend(cross)", ls.attend)
ls.write_step = timed("write_step", ls.write_step)
ls.Product.project = timed("products", ls.Product.project)
ls.FeedForward.forward = timed("feed-forward", ls.FeedForward.forward)
ls.DecoderLayerSteps.forward = timed("program total", ls.DecoderLayerSteps.forward)
fg.DecoderSteps.step = timed("step total", fg.DecoderSteps.step)
for mod in (torch.nn.LayerNorm,):
    mod.forward = timed("layer norms", mod.forward)
n=int(os.environ.get("N",64))
with torch.inference_mode(), fg.FastDecoder(q, script_layers=False) as dec:
    enc = tok([text]*n, return_tensors="pt")
    kw=dict(**enc, forced_bos_token_id=tok.get_lang_id("zh"), num_beams=4, max_new_tokens=30, min_new_tokens=30)
    dec.generate(**kw); T.clear()
    t=time.perf_counter(); out=dec.generate(**kw); total=time.perf_counter()-t
steps=out.shape[1]-1
print(f"N={n} rows {4*n}: {total/steps*1e3:.2f} ms/step")
for k,v in T.items(): print(f"  {k}: {v/steps*1e3:.3f} ms/step")
