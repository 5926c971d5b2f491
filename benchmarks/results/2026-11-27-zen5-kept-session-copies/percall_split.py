import time, torch, warnings, collections
warnings.simplefilter("ignore")
torch.set_num_threads(2)
import zhen
import zhen.fast_generation as fg, zhen.translation as tr
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast
M="/tmp/rt/small/model"
model = ZhenForConditionalGeneration.from_pretrained(M, dtype=torch.float32).eval()
tok = ZhenTokenizerFast.from_pretrained(M)
text="Tom is a man, and I'm a woman."
T=collections.defaultdict(float)
def timed(obj, name, label):
    f=getattr(obj,name)
    def g(*a, **k):
        t=time.perf_counter(); r=f(*a, **k); T[label]+=time.perf_counter()-t; return r
    setattr(obj,name,g)
timed(fg.FastDecoder, "__enter__", "session open")
timed(fg.FastDecoder, "__exit__", "session close")
timed(fg.FastDecoder, "decoder_steps", "encode+setup")
timed(fg, "beam_search", "beam search")
timed(fg, "greedy_search", "greedy search")
timed(tr, "_encode_sources", "tokenize")
timed(ZhenForConditionalGeneration, "train", "train/eval toggles")
for beams in (1,4):
    for _ in range(3): zhen.translate(text, model, tok, src_lang='en', tgt_lang='zh', num_beams=beams)
    T.clear(); n=30; t=time.perf_counter()
    for _ in range(n): out=zhen.translate(text, model, tok, src_lang='en', tgt_lang='zh', num_beams=beams)
    total=(time.perf_counter()-t)/n*1e3
    print(f"beam {beams}: {total:.2f} ms a call:", ", ".join(f"{k} {v/n*1e3:.2f}" for k,v in T.items()), "| out:", out)
