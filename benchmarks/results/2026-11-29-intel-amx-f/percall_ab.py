"""One text a call through zhen.translate, two variants of the code taking turns call by call (each first on every
other text, the order flipping every round), each on its own copy of the model. Usage (from the repository root):
percall_ab.py CHECKPOINT NUM_BEAMS VARIANTS_FILE [TEXTS] [ROUNDS]; VARIANTS_FILE defines VARIANTS = {name: switch}."""
import importlib.util, statistics, sys, time, warnings
import torch
warnings.simplefilter("ignore")
from transformers.utils import logging; logging.set_verbosity_error()
import zhen
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast
from zhen.data import load_parallel
from zhen.evaluation import parallel_columns
torch.set_num_threads(2)
path, beams, variant_file = sys.argv[1], int(sys.argv[2]), sys.argv[3]
count = int(sys.argv[4]) if len(sys.argv) > 4 else 16
rounds = int(sys.argv[5]) if len(sys.argv) > 5 else 3
spec = importlib.util.spec_from_file_location("variants", variant_file); variants = importlib.util.module_from_spec(spec); spec.loader.exec_module(variants)
V = variants.VARIANTS
tok = ZhenTokenizerFast.from_pretrained(path)
models = {name: ZhenForConditionalGeneration.from_pretrained(path).eval() for name in V}
pairs = parallel_columns(load_parallel("../shared/data/tatoeba/valid.jsonl.gz"), count)
for src, tgt in (("en", "zh"), ("zh", "en")):
    texts = pairs[src]
    outs = {n: [] for n in V}
    for n, switch in V.items():
        switch(); zhen.translate(texts[:2], models[n], tok, src_lang=src, tgt_lang=tgt, num_beams=beams)
        for t in texts[:3]: zhen.translate(t, models[n], tok, src_lang=src, tgt_lang=tgt, num_beams=beams)
    times = {n: [] for n in V}
    names = list(V)
    for r in range(rounds):
        for i, t in enumerate(texts):
            order = names if (i + r) % 2 == 0 else names[::-1]
            for n in order:
                V[n]()
                s = time.perf_counter(); o = zhen.translate(t, models[n], tok, src_lang=src, tgt_lang=tgt, num_beams=beams); times[n].append(time.perf_counter() - s)
                if r == 0: outs[n].append(o)
    a, b = names
    ratios = [x / y for x, y in zip(times[a], times[b])]
    q = statistics.quantiles(ratios, n=4)
    same = sum(x == y for x, y in zip(outs[a], outs[b]))
    print(f"{src}->{tgt} beam {beams}: " + ", ".join(f"{n} median {statistics.median(times[n])*1e3:.2f} ms" for n in names)
          + f"; {a}/{b} paired median {statistics.median(ratios):.3f} (quartiles {q[0]:.3f}-{q[2]:.3f}); {same}/{len(texts)} same outputs")
