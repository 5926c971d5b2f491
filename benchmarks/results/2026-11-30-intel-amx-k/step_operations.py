import sys, warnings
import torch
warnings.simplefilter("ignore")
from transformers.utils import logging; logging.set_verbosity_error()
import zhen, zhen.fast_generation as fg
fg.SCRIPT_AFTER_SECONDS = 0
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast
torch.set_num_threads(2)
path, beams = sys.argv[1], int(sys.argv[2])
tok = ZhenTokenizerFast.from_pretrained(path)
m = ZhenForConditionalGeneration.from_pretrained(path).eval()
t = "Tom didn't want to go there by himself."
for _ in range(3): zhen.translate(t, m, tok, tgt_lang="zh", num_beams=beams)
from torch.profiler import profile
with profile() as p:
    out = zhen.translate(t, m, tok, tgt_lang="zh", num_beams=beams)
print(out)
evs = [e for e in p.events() if e.cpu_parent is None]
for e in evs:
    print(f"{e.name[:60]:60s} {e.cpu_time_total:8.1f} us")
