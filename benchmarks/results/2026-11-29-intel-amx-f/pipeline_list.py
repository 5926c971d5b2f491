import sys, time, warnings, statistics
import torch
warnings.simplefilter("ignore")
from transformers.utils import logging; logging.set_verbosity_error()
import zhen
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast
from zhen.pipeline_zhen import ZhenTranslationPipeline
from zhen.data import load_parallel
from zhen.evaluation import parallel_columns
torch.set_num_threads(2)
path = sys.argv[1]; beams = int(sys.argv[2])
tok = ZhenTokenizerFast.from_pretrained(path)
m = ZhenForConditionalGeneration.from_pretrained(path).eval()
pipe = ZhenTranslationPipeline(model=m, tokenizer=tok)
texts = parallel_columns(load_parallel("../shared/data/tatoeba/valid.jsonl.gz"), 16)["en"]
f = {"pipeline": lambda t: pipe([t], src_lang="en", tgt_lang="zh", num_beams=beams, batch_size=32), "translate": lambda t: pipe(t, src_lang="en", tgt_lang="zh", num_beams=beams)}
for t in texts[:3]:
    for g in f.values(): g(t)
times = {k: [] for k in f}
for r in range(4):
    for i, t in enumerate(texts):
        for k in (list(f) if (i + r) % 2 else list(f)[::-1]):
            s = time.perf_counter(); f[k](t); times[k].append(time.perf_counter() - s)
d = [a - b for a, b in zip(times["pipeline"], times["translate"])]
print({k: f"{statistics.median(v)*1e3:.2f} ms" for k, v in times.items()}, f"pipeline - translate paired median {statistics.median(d)*1e3:.2f} ms")
if len(sys.argv) > 3:
    import cProfile, pstats
    pr = cProfile.Profile(); pr.enable()
    for r in range(5):
        for t in texts: f["pipeline"](t)
    pr.disable(); st = pstats.Stats(pr); st.sort_stats("cumulative").print_stats(50)
