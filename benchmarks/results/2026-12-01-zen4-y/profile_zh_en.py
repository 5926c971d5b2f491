import sys, torch
sys.path.insert(0, "benchmarks")
torch.set_num_threads(1)
from bleu_int8 import make_batches
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast
from zhen.data import load_parallel
from zhen.evaluation import parallel_columns
from zhen.fast_generation import FastDecoder
from zhen.quantization import quantize_dynamic
M = "/tmp/s36/small-cpu/model"
model = ZhenForConditionalGeneration.from_pretrained(M, dtype=torch.float32).eval()
tok = ZhenTokenizerFast.from_pretrained(M)
cols = parallel_columns(load_parallel("../shared/data/tatoeba/valid.jsonl.gz"), 1000)
q = quantize_dynamic(model)
mnt = lambda n: max(1, min(int(1.5 * n) + 10, 512))
rows, batches = make_batches(tok, cols["zh"], "zh", "en", 64, 1, mnt)
with torch.inference_mode(), FastDecoder(q, weights="auto") as dec:
    for _ in range(2): list(dec.generate_batches(batches, 1))
    with torch.profiler.profile() as p:
        list(dec.generate_batches(batches, 1))
print(p.key_averages().table(sort_by="self_cpu_time_total", row_limit=30))
