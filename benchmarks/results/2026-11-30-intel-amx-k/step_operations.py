"""Every top-level PyTorch operation of one zhen.translate call of one text, in order, with its time.
Usage: step_operations.py CHECKPOINT BEAMS"""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import load
import zhen
path, beams = sys.argv[1], int(sys.argv[2])
m, tok = load(path)
t = "Tom didn't want to go there by himself."
for _ in range(3): zhen.translate(t, m, tok, tgt_lang="zh", num_beams=beams)
from torch.profiler import profile
with profile() as p:
    out = zhen.translate(t, m, tok, tgt_lang="zh", num_beams=beams)
print(out)
evs = [e for e in p.events() if e.cpu_parent is None]
for e in evs:
    print(f"{e.name[:60]:60s} {e.cpu_time_total:8.1f} us")
