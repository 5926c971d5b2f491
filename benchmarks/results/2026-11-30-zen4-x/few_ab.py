"""A few texts a call (PER texts, CALLS calls, greedy and beam 4): the pipeline's list path before (55d6278) and after,
and `zhen.translate`, taking turns on every call in one process; medians of each call's time. Env: PER, CALLS, MODEL.
Run from the repository root: python benchmarks/results/2026-11-30-zen4-x/few_ab.py"""
import os, statistics, sys, time, warnings
warnings.simplefilter("ignore")
from transformers.utils import logging; logging.set_verbosity_error()
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast, translate
from zhen.data import load_parallel
from zhen.evaluation import parallel_columns
from zhen.pipeline_zhen import ZhenTranslationPipeline
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from before import Before  # noqa: E402
M = os.environ.get("MODEL", "/tmp/s36/small-cpu/model")
PER, CALLS = int(os.environ.get("PER", 4)), int(os.environ.get("CALLS", 64))
model = ZhenForConditionalGeneration.from_pretrained(M).eval(); tok = ZhenTokenizerFast.from_pretrained(M)
cols = parallel_columns(load_parallel("../shared/data/tatoeba/valid.jsonl.gz"))
before, after = Before(model=model, tokenizer=tok, tgt_lang="zh"), ZhenTranslationPipeline(model=model, tokenizer=tok, tgt_lang="zh")
print(f"# {M}, {PER} texts a call, {CALLS} calls, en->zh")
for beams in (1, 4):
    systems = {"before": lambda t: before(t, src_lang="en", num_beams=beams),
               "after": lambda t: after(t, src_lang="en", num_beams=beams),
               "translate": lambda t: translate(t, model, tok, src_lang="en", tgt_lang="zh", num_beams=beams)}
    times = {k: [] for k in systems}
    for call in range(CALLS + 40):  # the first 40 warm up (and pass the calls after which zhen drafts)
        start = call * PER % (len(cols["en"]) - PER)
        texts = cols["en"][start : start + PER]
        names = list(systems)[call % 3:] + list(systems)[: call % 3]
        for k in names:
            t = time.perf_counter(); systems[k](texts); dt = time.perf_counter() - t
            if call >= 40:
                times[k].append(dt)
    ratio = statistics.median(b / a for a, b in zip(times["after"], times["before"]))
    med = {k: 1000 * statistics.median(v) for k, v in times.items()}
    print(f"beams {beams}: before {med['before']:.1f} ms, after {med['after']:.1f} ms, translate {med['translate']:.1f} ms;"
          f" after x before (median of paired calls) {ratio:.2f}", flush=True)
