"""The pipeline's list path before (commit 55d6278: each batch through `Pipeline.__call__`, in streams) and after
(`_decode_in_batches`: tokenized at once, `FastDecoder.generate_batches`, pooled greedy tails), with `zhen.translate`,
taking turns in one process; default batch sizes (none given), medians of ROUNDS. Env: N, ROUNDS, CORPUS, BEAMS, MODEL.
Run from the repository root: python benchmarks/results/2026-11-30-zen4-x/pipe_ab.py"""
import os, statistics, sys, time, warnings
import torch
warnings.simplefilter("ignore")
from transformers.utils import logging; logging.set_verbosity_error()
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast, translate
from zhen.data import load_parallel
from zhen.evaluation import parallel_columns
from zhen.pipeline_zhen import ZhenTranslationPipeline
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from before import Before  # noqa: E402
M = os.environ.get("MODEL", "/tmp/s36/small-cpu/model")
N, R = int(os.environ.get("N", 1000)), int(os.environ.get("ROUNDS", 5))
corpus = os.environ.get("CORPUS", "../shared/data/tatoeba/valid.jsonl.gz")
model = ZhenForConditionalGeneration.from_pretrained(M).eval(); tok = ZhenTokenizerFast.from_pretrained(M)
cols = parallel_columns(load_parallel(corpus))
print(f"# {M} {corpus} N={N} rounds={R} threads={torch.get_num_threads()}")
for beams in map(int, os.environ.get("BEAMS", "1,4").split(",")):
    for src, tgt in (("en", "zh"), ("zh", "en")):
        texts = cols[src][:N]
        systems = {
            "before": lambda: Before(model=model, tokenizer=tok, tgt_lang=tgt)(texts, src_lang=src, num_beams=beams),
            "after": lambda: ZhenTranslationPipeline(model=model, tokenizer=tok, tgt_lang=tgt)(texts, src_lang=src, num_beams=beams),
            "translate": lambda: translate(texts, model, tok, src_lang=src, tgt_lang=tgt, num_beams=beams),
        }
        outs = {k: f() for k, f in systems.items()}
        same = sum(a["translation_text"] == b["translation_text"] for a, b in zip(outs["before"], outs["after"]))
        same_t = sum(a["translation_text"] == b for a, b in zip(outs["after"], outs["translate"]))
        times = {k: [] for k in systems}
        for r in range(R):
            names = list(systems)[r % 3:] + list(systems)[: r % 3]
            for k in names:
                t = time.perf_counter(); systems[k](); times[k].append(time.perf_counter() - t)
        ratios = [b / a for a, b in zip(times["after"], times["before"])]
        med = {k: statistics.median(v) for k, v in times.items()}
        print(f"{src}-{tgt} beams {beams}: before {med['before']:.3f}s after {med['after']:.3f}s translate {med['translate']:.3f}s"
              f" | after x before {statistics.median(ratios):.2f} (rounds {min(ratios):.2f}-{max(ratios):.2f})"
              f" | after/translate time {med['after']/med['translate']:.2f} | same as before {same}/{N}, as translate {same_t}/{N}", flush=True)
