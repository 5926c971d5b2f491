"""One thread: FBGEMM's packed int8 sums (8-bit levels) vs torch._int_mm, by rows and LM head shape."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from best_time import best_seconds
import sys, time, torch
from zhen.screened_argmax import fbgemm_packed, fbgemm_sums
torch.set_num_threads(1)
t = lambda f: best_seconds(f, 20, 7, 3) * 1e3
for vocab, width in ((16000, 256), (32000, 256), (32000, 512), (16000, 512), (64000, 512)):
    w = torch.randint(-127, 128, (vocab, width), dtype=torch.int8)
    packed = fbgemm_packed(w, 127)
    wt = w.t()
    line = []
    for rows in (8, 16, 24, 32, 48, 64, 96, 128):
        q = torch.randint(-127, 128, (rows, width)).float()
        q8 = q.to(torch.int8)
        a = t(lambda: fbgemm_sums(q, packed, 127)); b = t(lambda: torch._int_mm(q8, wt))
        line.append(f"{rows}:{b/a:.2f}")
    print(f"{vocab}x{width} (numel {vocab*width/2**20:.1f}M) _int_mm/fbgemm time by rows:", " ".join(line), flush=True)
