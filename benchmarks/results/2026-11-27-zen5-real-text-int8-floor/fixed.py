import sys, time, torch, warnings, os
warnings.simplefilter("ignore")
torch.set_num_threads(1)
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast
from zhen.fast_generation import FastDecoder
from zhen.quantization import quantize_dynamic
import zhen.fast_generation as fg
M="/tmp/rt/small/model"
model = ZhenForConditionalGeneration.from_pretrained(M, dtype=torch.float32).eval()
tok = ZhenTokenizerFast.from_pretrained(M)
q = quantize_dynamic(model) if os.environ.get("Q","1")=="1" else model
tok.src_lang, tok.tgt_lang = "en","zh"
text = "The ecological footprint of a country is closely related to its level of economic development."
T={}
orig_step, orig_logits = fg.DecoderSteps.step, fg.DecoderSteps.logits
def step(self,*a):
    t=time.perf_counter(); r=orig_step(self,*a); T["step"]=T.get("step",0)+time.perf_counter()-t; return r
def logits(self,*a):
    t=time.perf_counter(); r=orig_logits(self,*a); T["logits"]=T.get("logits",0)+time.perf_counter()-t; return r
fg.DecoderSteps.step, fg.DecoderSteps.logits = step, logits
with torch.inference_mode(), FastDecoder(q) as dec:
  for beams in (1,4):
    for n in (1, 4, 16, 64):
      enc = tok([text]*n, return_tensors="pt")
      kw=dict(**enc, forced_bos_token_id=tok.get_lang_id("zh"), num_beams=beams, max_new_tokens=30, min_new_tokens=30)
      dec.generate(**kw)
      reps=max(2, 64//n); T.clear()
      t=time.perf_counter()
      for _ in range(reps): out=dec.generate(**kw)
      dt=(time.perf_counter()-t)/reps
      steps=out.shape[1]-1
      print(f"beams {beams} sentences {n:3d} rows {n*beams:4d}: {dt/steps*1e3:.3f} ms/step total; layers {T['step']/reps/steps*1e3:.3f}; lm head {T['logits']/reps/steps*1e3:.3f}; rest {(dt-(T['step']+T['logits'])/reps)/steps*1e3:.3f}")
