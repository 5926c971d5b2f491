import statistics, time, torch, sys, warnings
warnings.simplefilter("ignore")
from transformers.utils import logging; logging.set_verbosity_error()
import zhen, zhen.fast_generation as fg
from zhen.screened_argmax import ScreenedArgmax
from zhen.fast_generation import Bf16Linear, argmax
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast
from zhen.data import load_parallel
from zhen.evaluation import parallel_columns
torch.set_num_threads(2)
path = sys.argv[1]
m = ZhenForConditionalGeneration.from_pretrained(path).eval(); tok = ZhenTokenizerFast.from_pretrained(path)
pairs = parallel_columns(load_parallel("../shared/data/tatoeba/valid.jsonl.gz"), 40)
hs = []
orig = fg.DecoderSteps.next_tokens
def spy(self, h, banned=None):
    hs.append(h.clone()); return orig(self, h, banned)
fg.DecoderSteps.next_tokens = spy
for src, tgt in (("en", "zh"), ("zh", "en")):
    for t in pairs[src]: zhen.translate(t, m, tok, src_lang=src, tgt_lang=tgt, num_beams=1)
fg.DecoderSteps.next_tokens = orig
hs = [h for h in hs if len(h) == 1]
print(len(hs), "one-row hidden states")
head = m.get_output_embeddings()
screen = ScreenedArgmax(head); b16 = Bf16Linear(head)
v = {"screen": lambda x: screen(x), "bf16": lambda x: argmax(b16(x)), "fp32": lambda x: argmax(head(x))}
t = {k: [] for k in v}; declined = agree_b16 = agree32 = 0
with torch.inference_mode():
    for r in range(3):
        for x in hs:
            for k, f in v.items():
                s = time.perf_counter(); res = f(x); t[k].append(time.perf_counter() - s)
                if r == 0: out = {} if k == "screen" else out; out[k] = res
            if r == 0:
                declined += out["screen"] is None
                if out["screen"] is not None:
                    agree32 += int(out["screen"][0]) == int(out["fp32"][0]); agree_b16 += int(out["screen"][0]) == int(out["bf16"][0])
print({k: f"{statistics.median(ts)*1e6:.0f} us" for k, ts in t.items()}, f"declined {declined}/{len(hs)}, screen=fp32 {agree32}, screen=bf16 {agree_b16}")
