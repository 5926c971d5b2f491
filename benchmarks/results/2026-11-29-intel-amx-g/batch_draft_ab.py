"""Greedy calls of a few texts, drafted in step (MAX_DRAFTED_SENTENCES=8) against undrafted (=1), taking turns call
by call in one process. Usage: batch_draft_ab.py MODEL TEXTS_A_CALL [ROUNDS] [SRC]"""
import statistics, sys, time, warnings
import torch
warnings.simplefilter("ignore")
from transformers.utils import logging; logging.set_verbosity_error()
import zhen, zhen.fast_generation as fg, zhen.draft_decoding as dd
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast
from zhen.data import load_parallel
from zhen.evaluation import parallel_columns
torch.set_num_threads(2)
path, n = sys.argv[1], int(sys.argv[2]); rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 2
src = sys.argv[4] if len(sys.argv) > 4 else "en"; tgt = "zh" if src == "en" else "en"
tok = ZhenTokenizerFast.from_pretrained(path)
model = ZhenForConditionalGeneration.from_pretrained(path).eval()
texts = parallel_columns(load_parallel("../shared/data/tatoeba/valid.jsonl.gz"), 64)[src]
calls = [texts[i:i + n] for i in range(0, len(texts) - n + 1, n)][:16]
def run(variant, batch):
    dd.MAX_DRAFTED_SENTENCES = 8 if variant == "drafted" else 1
    start = time.perf_counter()
    out = zhen.translate(batch, model, tok, src_lang=src, tgt_lang=tgt, num_beams=1)
    return time.perf_counter() - start, out
for i in range(40):  # past DRAFT_AFTER one-text calls: the draft exists
    zhen.translate(texts[i % len(texts)], model, tok, src_lang=src, tgt_lang=tgt, num_beams=1)
times = {"undrafted": [], "drafted": []}; same = 0; ratios = []
for r in range(rounds):
    for batch in calls:
        order = ["undrafted", "drafted"] if len(ratios) % 2 == 0 else ["drafted", "undrafted"]
        res = {v: run(v, batch) for v in order}
        for v in res: times[v].append(res[v][0])
        ratios.append(res["undrafted"][0] / res["drafted"][0])
        same += res["undrafted"][1] == res["drafted"][1]
print(f"{path} {src}->{tgt} {n} texts a call, {len(ratios)} paired calls")
for v, t in times.items():
    print(f"  {v:10s} median {statistics.median(t)*1e3:7.1f} ms")
print(f"  drafted x undrafted: median of paired ratios {statistics.median(ratios):.2f}, range {min(ratios):.2f}-{max(ratios):.2f}; same translations {same}/{len(ratios)}")
