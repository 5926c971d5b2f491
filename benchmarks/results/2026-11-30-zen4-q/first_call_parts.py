import sys, time, warnings, torch, collections
warnings.simplefilter("ignore")
import zhen
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast
from zhen.data import load_parallel
from zhen.evaluation import parallel_columns
import zhen.layer_steps as ls
M = "/tmp/s36/small-cpu/model"
cols = parallel_columns(load_parallel("../shared/data/tatoeba/valid.jsonl.gz"), 1000)
tok = ZhenTokenizerFast.from_pretrained(M)
model = ZhenForConditionalGeneration.from_pretrained(M, dtype=torch.float32).eval()
acc = collections.Counter()
orig = ls.scripted
def timed(steps, owner):
    t = time.perf_counter(); r = orig(steps, owner); acc[type(steps).__name__] += time.perf_counter() - t; return r
ls.scripted = timed
for call in range(2):
    acc.clear()
    t = time.perf_counter()
    out = zhen.translate(cols["en"], model=model, tokenizer=tok, tgt_lang="zh", num_beams=1)
    print(f"call {call}: {1e3*(time.perf_counter()-t):.0f} ms; compiling: " + ", ".join(f"{k} {v*1e3:.0f} ms" for k, v in acc.items()))
