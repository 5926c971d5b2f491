import sys, time, os, contextlib, warnings, tempfile
sys.path.insert(0, "/work/main/benchmarks")
warnings.simplefilter("ignore")
import torch
torch.set_num_threads(2)
from bleu_int8 import make_batches, in_input_order
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast
from zhen.data import load_parallel
from zhen.evaluation import parallel_columns
from zhen.fast_generation import FastDecoder
from zhen.hardware import decoding_streams
from zhen.quantization import quantize_dynamic
from zhen.convert_ctranslate2 import CTranslate2Generator, convert
M = "/tmp/s51/small-cpu/model"
model = ZhenForConditionalGeneration.from_pretrained(M, dtype=torch.float32).eval()
tok = ZhenTokenizerFast.from_pretrained(M)
cols = parallel_columns(load_parallel("../shared/data/tatoeba/valid.jsonl.gz"), 1000)
q = quantize_dynamic(model)
streams = decoding_streams(torch.device("cpu"))
print("streams", streams)
mnt = lambda n: max(1, min(int(1.5 * n) + 10, 511))
d = tempfile.mkdtemp()
out = convert(M, os.path.join(d, "int8"), quantization="int8")
gen = CTranslate2Generator(out, compute_type="int8", inter_threads=streams, intra_threads=max(1, 2 // streams))
src, tgt = sys.argv[1], sys.argv[2]
rows, batches = make_batches(tok, cols[src], src, tgt, 64, 1, mnt)
def zhen_run():
    with torch.inference_mode(), FastDecoder(q, weights="auto") as dec:
        return list(dec.generate_batches(batches, streams))
def ct2_run():
    return [w() for w in [gen.generate(**b, asynchronous=True) for b in batches]]
for r in range(4):
    for name, f in (("zhen", zhen_run), ("ct2", ct2_run)):
        t = time.perf_counter(); o = f(); dt = time.perf_counter() - t
        ntok = sum(int((x != tok.pad_token_id).sum()) for x in o) if name == "zhen" else 0
        print(r, name, round(1000 / dt, 1), "sent/s", ntok)
