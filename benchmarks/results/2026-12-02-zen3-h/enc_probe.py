import sys, time, os, warnings, tempfile
sys.path.insert(0, "/work/main/benchmarks")
warnings.simplefilter("ignore")
import torch
torch.set_num_threads(2)
from bleu_int8 import make_batches
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast
from zhen.data import load_parallel
from zhen.evaluation import parallel_columns
from zhen.fast_generation import FastDecoder
from zhen.quantization import quantize_dynamic
from zhen.convert_ctranslate2 import CTranslate2Generator, convert
M = "/tmp/s51/small-cpu/model"
model = ZhenForConditionalGeneration.from_pretrained(M, dtype=torch.float32).eval()
tok = ZhenTokenizerFast.from_pretrained(M)
cols = parallel_columns(load_parallel("../shared/data/tatoeba/valid.jsonl.gz"), 1000)
q = quantize_dynamic(model)
d = tempfile.mkdtemp()
out = convert(M, os.path.join(d, "int8"), quantization="int8")
gen = CTranslate2Generator(out, compute_type="int8", inter_threads=1, intra_threads=2)
src, tgt = sys.argv[1], sys.argv[2]
mnt = lambda n: max(1, min(int(1.5 * n) + 10, 511))
rows, batches = make_batches(tok, cols[src], src, tgt, 64, 1, mnt)
dec = FastDecoder(q, weights="auto").__enter__()
torch.inference_mode().__enter__()
def zhen_enc():
    for b in batches: dec.encode(b["input_ids"], b["attention_mask"])
def zhen_full():
    return list(dec.generate_batches(batches, 1))
def ct2(n):
    def f():
        for b in batches: gen.generate(**{**b, "max_new_tokens": n} if n else b)
    return f
fns = {"zhen_enc": zhen_enc, "ct2_1": ct2(1), "ct2_2": ct2(2), "ct2_3": ct2(3), "zhen_full": zhen_full, "ct2_full": ct2(0)}
for f in fns.values(): f(); f()
res = {k: [] for k in fns}
for r in range(5):
    for k, f in (fns.items() if r % 2 else reversed(list(fns.items()))):
        t = time.perf_counter(); f(); res[k].append(time.perf_counter() - t)
for k, v in res.items(): print(k, "min %.3f s  median %.3f s" % (min(v), sorted(v)[2]))
