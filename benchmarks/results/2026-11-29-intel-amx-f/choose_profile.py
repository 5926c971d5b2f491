import sys, time, warnings, statistics, copy
import torch
warnings.simplefilter("ignore")
from transformers.utils import logging; logging.set_verbosity_error()
import zhen, zhen.fast_generation as fg
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast
torch.set_num_threads(2)
path = sys.argv[1]
tok = ZhenTokenizerFast.from_pretrained(path)
m = ZhenForConditionalGeneration.from_pretrained(path).eval()
cap = []
orig = fg.BeamSearch.choose
def spy(self, lp, cur_len):
    if len(cap) < 30: cap.append((copy.copy(self), lp.clone(), cur_len))
    return orig(self, lp, cur_len)
fg.BeamSearch.choose = spy
zhen.translate("The quick brown fox jumps over the lazy dog near the river bank.", m, tok, src_lang="en", tgt_lang="zh", num_beams=4)
fg.BeamSearch.choose = orig
print(len(cap), "steps")
def run():
    for st, lp, c in cap:
        s = copy.copy(st); orig(s, lp, c)
for _ in range(20): run()
ts = []
for _ in range(50):
    s = time.perf_counter(); run(); ts.append(time.perf_counter() - s)
print(f"choose {statistics.median(ts)/len(cap)*1e6:.1f} us/step")
ts = []
for _ in range(50):
    s = time.perf_counter()
    for st, lp, c in cap: fg.top_continuations(lp, st.running_scores, 8)
    ts.append(time.perf_counter() - s)
print(f"top_continuations {statistics.median(ts)/len(cap)*1e6:.1f} us/step")
from torch.profiler import profile
with profile() as p:
    for _ in range(10): run()
print(p.key_averages().table(sort_by="self_cpu_time_total", row_limit=40))
