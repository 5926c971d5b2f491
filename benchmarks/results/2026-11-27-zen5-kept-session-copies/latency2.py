import time, torch, warnings
warnings.simplefilter("ignore")
torch.set_num_threads(2)
import zhen
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast
from zhen.fast_generation import FastDecoder
M="/tmp/rt/small/model"
model = ZhenForConditionalGeneration.from_pretrained(M, dtype=torch.float32).eval()
tok = ZhenTokenizerFast.from_pretrained(M)
text="The ecological footprint of a country is closely related to its level of economic development."
texts=[text, "Tom is a man, and I'm a woman.", "Please wait for me at the entrance of the building.", "I can't understand why you are so critical of him."]*2
def t(f, n=20):
    f(); s=time.perf_counter()
    for _ in range(n): f()
    return (time.perf_counter()-s)/n*1e3
for beams in (1,4):
  for s in (None,1):
    print(f"beam {beams} streams {s}: one sentence {t(lambda: zhen.translate(text, model, tok, src_lang='en', tgt_lang='zh', num_beams=beams, streams=s)):.1f} ms; "
          f"8 sentences {t(lambda: zhen.translate(texts, model, tok, src_lang='en', tgt_lang='zh', num_beams=beams, streams=s)):.1f} ms; ", end="")
    with FastDecoder(model):
        print(f"in a held session: one {t(lambda: zhen.translate(text, model, tok, src_lang='en', tgt_lang='zh', num_beams=beams, streams=s)):.1f} ms")
