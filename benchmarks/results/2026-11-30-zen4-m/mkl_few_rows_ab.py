"""One text a call (16 Tatoeba texts, zhen.translate, best of 3) with the few-row float32 products of the code before
this session (on: the default then) and without them (off: bf16 session; f32off: float32 session, with
ZHEN_HARDWARE=cpu_bf16=emulated). Usage (repo root, code before 9d93ce7): mkl_few_rows_ab.py CHECKPOINT on|off|f32on|f32off"""
import sys, time, warnings, statistics
warnings.simplefilter("ignore")
import torch
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast, layer_steps
from zhen.data import load_parallel
from zhen.evaluation import parallel_columns
from zhen.translation import translate
torch.set_num_threads(2)
M, mode = sys.argv[1], sys.argv[2]
if mode == "f32off":
    layer_steps.FEW_ROW_MACS = 0
if mode == "off":
    layer_steps.BF16_FEW_ROW_MACS = 0
model = ZhenForConditionalGeneration.from_pretrained(M).eval()
tok = ZhenTokenizerFast.from_pretrained(M)
cols = parallel_columns(load_parallel("../shared/data/tatoeba/valid.jsonl.gz"), int(sys.argv[3]) if len(sys.argv) > 3 else 16)
out = []
for beams in (1, 4):
    for src, tgt in (("en", "zh"), ("zh", "en")):
        texts = cols[src]
        tok.src_lang = src
        for _ in range(2):
            for t in texts: translate(t, model, tok, src_lang=src, tgt_lang=tgt, num_beams=beams)
        best = 1e9
        for _ in range(3):
            a = time.perf_counter()
            for t in texts: translate(t, model, tok, src_lang=src, tgt_lang=tgt, num_beams=beams)
            best = min(best, (time.perf_counter() - a) / len(texts) * 1000)
        out.append(f"beam{beams} {src}-{tgt} {best:.1f}ms")
print(mode, " ".join(out), flush=True)
