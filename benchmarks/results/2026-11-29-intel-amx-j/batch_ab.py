import importlib.util, statistics, sys, time, warnings
import torch
warnings.simplefilter("ignore")
from transformers.utils import logging; logging.set_verbosity_error()
import zhen
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast
from zhen.data import load_parallel
from zhen.evaluation import parallel_columns
torch.set_num_threads(2)
path, beams, variant_file, size, rounds = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
spec = importlib.util.spec_from_file_location("variants", variant_file); variants = importlib.util.module_from_spec(spec); spec.loader.exec_module(variants)
V = variants.VARIANTS; names = list(V)
tok = ZhenTokenizerFast.from_pretrained(path)
models = {n: ZhenForConditionalGeneration.from_pretrained(path).eval() for n in V}
pairs = parallel_columns(load_parallel("../shared/data/tatoeba/valid.jsonl.gz"), size * 4)
texts = pairs["en"]
batches = [texts[i:i + size] for i in range(0, len(texts), size)]
for n in names: V[n](); zhen.translate(batches[0], models[n], tok, src_lang="en", tgt_lang="zh", num_beams=beams, batch_size=size)
times = {n: [] for n in names}
for r in range(rounds):
    for i, b in enumerate(batches):
        for n in (names if (i + r) % 2 == 0 else names[::-1]):
            V[n](); s = time.perf_counter(); zhen.translate(b, models[n], tok, src_lang="en", tgt_lang="zh", num_beams=beams, batch_size=size); times[n].append(time.perf_counter() - s)
a, c = names
ratios = [x / y for x, y in zip(times[a], times[c])]
print(f"{size} texts a call, beam {beams}: " + ", ".join(f"{n} {statistics.median(times[n])*1e3:.0f} ms" for n in names) + f"; {a}/{c} paired median {statistics.median(ratios):.3f}")
