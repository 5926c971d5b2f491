import sys, time, warnings, torch, os, tempfile
warnings.simplefilter("ignore")
import zhen
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast
from zhen.data import load_parallel
from zhen.evaluation import parallel_columns
from zhen.quantization import quantize_dynamic
M = "/tmp/s36/small-cpu/model"
which = sys.argv[1]
cols = parallel_columns(load_parallel("../shared/data/tatoeba/valid.jsonl.gz"), 1000)
tok = ZhenTokenizerFast.from_pretrained(M)
model = ZhenForConditionalGeneration.from_pretrained(M, dtype=torch.float32).eval()
if which == "int8":
    t = time.perf_counter(); m = quantize_dynamic(model); print(f"quantize {1e3*(time.perf_counter()-t):.0f} ms")
else:
    m = model
for call in range(3):
    t = time.perf_counter()
    out = zhen.translate(cols["en"], model=m, tokenizer=tok, tgt_lang="zh", num_beams=1)
    print(f"{which} call {call}: {1e3*(time.perf_counter()-t):.0f} ms")
