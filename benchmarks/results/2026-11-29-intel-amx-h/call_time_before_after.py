"""A small-cpu zhen.translate call (greedy; without num_beams=1 the checkpoint's default beam 4) and a fixed reference of
200 small torch.add calls, taken in turn 80 times; run alternately with this commit and with PYTHONPATH at the
session's start (e9fa915). Usage: call_time_before_after.py CHECKPOINT"""
import sys, time, statistics, warnings
import torch
warnings.simplefilter("ignore")
from transformers.utils import logging; logging.set_verbosity_error()
import zhen
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast
torch.set_num_threads(2)
m = ZhenForConditionalGeneration.from_pretrained(sys.argv[1]).eval()
tok = ZhenTokenizerFast.from_pretrained(sys.argv[1])
x = torch.randn(4, 256)
def ref():
    for _ in range(200):
        torch.add(x, x)
calls, refs = [], []
for i in range(80):
    s = time.perf_counter(); zhen.translate("Where is the station?", m, tok, src_lang="en", tgt_lang="zh", num_beams=1); calls.append(time.perf_counter() - s)
    s = time.perf_counter(); ref(); refs.append(time.perf_counter() - s)
c, r = statistics.median(calls[10:]), statistics.median(refs[10:])
print(f"greedy call {c*1e3:.2f} ms, reference {r*1e6:.0f} us, ratio {c/r:.2f}")
