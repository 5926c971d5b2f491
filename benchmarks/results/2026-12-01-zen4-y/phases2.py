# zh->en / en->zh int8 greedy, one thread: session opening, decode, against CT2 on the same batches; alternating.
import sys, time, os, statistics, tempfile, contextlib
sys.path.insert(0, "benchmarks")
import torch
torch.set_num_threads(1)
from bleu_int8 import make_batches
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast
from zhen.data import load_parallel
from zhen.evaluation import parallel_columns
from zhen.fast_generation import FastDecoder
from zhen.quantization import quantize_dynamic
from zhen.convert_ctranslate2 import CTranslate2Generator, convert
M = "/tmp/s36/small-cpu/model"
model = ZhenForConditionalGeneration.from_pretrained(M, dtype=torch.float32).eval()
tok = ZhenTokenizerFast.from_pretrained(M)
cols = parallel_columns(load_parallel("../shared/data/tatoeba/valid.jsonl.gz"), 1000)
q = quantize_dynamic(model)
d = tempfile.mkdtemp()
out = convert(M, os.path.join(d, "int8"), quantization="int8")
ct2 = CTranslate2Generator(out, compute_type="int8", inter_threads=1, intra_threads=1)
mnt = lambda n: max(1, min(int(1.5 * n) + 10, 512))
direction = sys.argv[1] if len(sys.argv) > 1 else "zh-en"
src, tgt = direction.split("-")
rows, batches = make_batches(tok, cols[src], src, tgt, 64, 1, mnt)
for b in batches:
    b["num_beams"] = 1
    if len(sys.argv) > 3: b["max_new_tokens"] = int(sys.argv[3])
res = {"open": [], "zhen": [], "ct2": []}
with torch.inference_mode():
    for r in range(int(sys.argv[2]) if len(sys.argv) > 2 else 5):
        t = time.perf_counter()
        with FastDecoder(q, weights="auto") as dec:
            t1 = time.perf_counter()
            zo = list(dec.generate_batches(batches, 1))
            t2 = time.perf_counter()
        res["open"].append(t1 - t); res["zhen"].append(t2 - t1)
        t = time.perf_counter()
        co = [w() for w in [ct2.generate(**b, asynchronous=True) for b in batches]]
        res["ct2"].append(time.perf_counter() - t)
steps_z = sum(o.shape[1] for o in zo); steps_c = sum(o.shape[1] for o in co)
print(direction, {k: round(statistics.median(v) * 1000, 1) for k, v in res.items()},
      "ratio ct2/(open+zhen)", round(statistics.median(res["ct2"]) / statistics.median([a + b for a, b in zip(res["open"], res["zhen"])]), 3),
      "ratio ct2/zhen", round(statistics.median(res["ct2"]) / statistics.median(res["zhen"]), 3), "cols", steps_z, steps_c)
