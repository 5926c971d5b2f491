"""zhen.translate's sentences/s by batch size, default session and int8 copy, on Tatoeba and news validation text,
systems and sizes taking turns; two threads (default streams)."""
import sys, time, warnings, statistics, copy, torch
warnings.simplefilter("ignore")
import zhen
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast
from zhen.data import load_parallel
from zhen.evaluation import parallel_columns
from zhen.quantization import quantize_dynamic
M = sys.argv[1]; corpus = sys.argv[2]; n = int(sys.argv[3]); sizes = [int(x) for x in sys.argv[4].split(",")]
beams = int(sys.argv[5]) if len(sys.argv) > 5 else 1
model = ZhenForConditionalGeneration.from_pretrained(M, dtype=torch.float32).eval()
tok = ZhenTokenizerFast.from_pretrained(M)
q = quantize_dynamic(copy.deepcopy(model))
cols = parallel_columns(load_parallel(f"../shared/data/{corpus}/valid.jsonl.gz"), n)
res = {}
for direction in ("en-zh", "zh-en"):
    src, tgt = direction.split("-")
    texts = cols[src]
    for name, m in (("default", model), ("int8", q)):
        zhen.translate(texts[:200], m, tok, src_lang=src, tgt_lang=tgt, num_beams=beams)
    for r in range(3):
        for name, m in (("default", model), ("int8", q)):
            for bs in (sizes if r % 2 == 0 else sizes[::-1]):
                t = time.perf_counter()
                out = zhen.translate(texts, m, tok, src_lang=src, tgt_lang=tgt, batch_size=bs, num_beams=beams)
                res.setdefault((direction, name, bs), []).append(len(texts) / (time.perf_counter() - t))
for direction in ("en-zh", "zh-en"):
    for name in ("default", "int8"):
        base = max(res[(direction, name, sizes[0])])
        print(direction, name, " ".join(f"bs{bs} {max(res[(direction, name, bs)]):.0f} ({max(res[(direction, name, bs)])/base:.2f}x)" for bs in sizes), flush=True)
