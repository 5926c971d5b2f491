import sys, time, warnings, statistics
warnings.simplefilter("ignore")
import torch
torch.set_num_threads(2)
import zhen
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast
from zhen.data import load_parallel
from zhen.evaluation import parallel_columns
from zhen.quantization import quantize_dynamic
M = sys.argv[1]
model = ZhenForConditionalGeneration.from_pretrained(M, dtype=torch.float32).eval()
tok = ZhenTokenizerFast.from_pretrained(M)
cols = parallel_columns(load_parallel("../shared/data/tatoeba/valid.jsonl.gz"), 1000)
models = {"fp32": model, "int8": quantize_dynamic(model)}
extra = dict(max_new_tokens=int(sys.argv[2])) if len(sys.argv) > 2 else {}
for beams in (1, 4):
    for N in (16, 32, 64):
        texts = cols["en"][300:300 + N]
        for name, m in models.items():
            arms = {"one batch": dict(batch_size=N), "two halves": dict(batch_size=N // 2)}
            for a in arms.values(): zhen.translate(texts, model=m, tokenizer=tok, tgt_lang="zh", num_beams=beams, **a, **extra)
            ts = {k: [] for k in arms}
            for r in range(7):
                for k, a in (arms.items() if r % 2 else reversed(list(arms.items()))):
                    t = time.perf_counter(); zhen.translate(texts, model=m, tokenizer=tok, tgt_lang="zh", num_beams=beams, **a, **extra); ts[k].append(time.perf_counter() - t)
            one, two = statistics.median(ts["one batch"]), statistics.median(ts["two halves"])
            print("beams", beams, "texts", N, name, "one batch %.1f ms  two halves in two streams %.1f ms  ratio %.2f" % (1e3 * one, 1e3 * two, one / two), flush=True)
