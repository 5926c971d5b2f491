"""BLEU of the pipeline's list path before (55d6278) and after this session's change, greedy, default batches.
Env: N, CORPUS. Run from the repository root: python benchmarks/results/2026-11-30-zen4-x/bleu_ab.py"""
import os, sys, warnings; warnings.simplefilter("ignore")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from transformers.utils import logging; logging.set_verbosity_error()
import sacrebleu
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast
from zhen.data import load_parallel
from zhen.evaluation import parallel_columns
from zhen.pipeline_zhen import ZhenTranslationPipeline
from before import Before
M="/tmp/s36/small-cpu/model"; N=int(os.environ.get("N",300))
model=ZhenForConditionalGeneration.from_pretrained(M).eval(); tok=ZhenTokenizerFast.from_pretrained(M)
cols=parallel_columns(load_parallel(os.environ.get("CORPUS","../shared/data/news/valid.jsonl.gz")))
for src,tgt in (("en","zh"),("zh","en")):
    refs=cols[tgt][:N]
    for name,cls in (("before",Before),("after",ZhenTranslationPipeline)):
        out=[r["translation_text"] for r in cls(model=model,tokenizer=tok,tgt_lang=tgt)(cols[src][:N],src_lang=src,num_beams=1)]
        print(src,tgt,name, round(sacrebleu.corpus_bleu(out,[refs],tokenize="zh" if tgt=="zh" else "13a").score,2))
