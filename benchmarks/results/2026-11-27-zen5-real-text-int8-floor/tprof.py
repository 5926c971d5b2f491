import sys, time, torch, warnings, os
sys.path.insert(0, "/work/main/benchmarks")
warnings.simplefilter("ignore")
torch.set_num_threads(1)
from bleu_int8 import translate_ids
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast
from zhen.data import load_parallel
from zhen.evaluation import parallel_columns
from zhen.fast_generation import FastDecoder
from zhen.quantization import quantize_dynamic
M="/tmp/rt/small/model"
model = ZhenForConditionalGeneration.from_pretrained(M, dtype=torch.float32).eval()
tok = ZhenTokenizerFast.from_pretrained(M)
cols = parallel_columns(load_parallel("/work/shared/data/tatoeba/valid.jsonl.gz"), 500)
q = quantize_dynamic(model) if os.environ.get("Q","1")=="1" else model
mnt = lambda L: max(1, min(int(1.5*L)+10, 512))
src,tgt = os.environ.get("DIR","en-zh").split("-")
def run():
    with torch.inference_mode(), FastDecoder(q, weights="auto") as dec:
        return translate_ids(lambda b: [dec.generate(**kw) for kw in b], tok, cols[src], src, tgt, 64, 4, mnt)
run(); run()
from torch.profiler import profile
with profile(record_shapes=True) as p: run()
print(p.key_averages(group_by_input_shape=True).table(sort_by="self_cpu_time_total", row_limit=30))
