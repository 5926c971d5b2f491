# zhen.translate on 1,000 Tatoeba sentences (small-cpu), default session; prints the tree's median seconds of 3 calls.
import sys, time, statistics, torch
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast, translate
from zhen.data import load_parallel
from zhen.evaluation import parallel_columns
M = "/tmp/s36/small-cpu/model"
model = ZhenForConditionalGeneration.from_pretrained(M).eval()
tok = ZhenTokenizerFast.from_pretrained(M)
cols = parallel_columns(load_parallel("/work/shared/data/tatoeba/valid.jsonl.gz"), 1000)
out = {}
for beams in (1, 4):
    translate(cols["en"][:200], model, tok, src_lang="en", tgt_lang="zh", num_beams=beams)
    times = []
    for _ in range(3):
        t = time.perf_counter(); r = translate(cols["en"], model, tok, src_lang="en", tgt_lang="zh", num_beams=beams); times.append(time.perf_counter() - t)
    out[beams] = (round(statistics.median(times), 3), __import__("hashlib").md5("\n".join(r).encode()).hexdigest()[:10])
import zhen; print(sys.argv[1], zhen.__file__, out)
