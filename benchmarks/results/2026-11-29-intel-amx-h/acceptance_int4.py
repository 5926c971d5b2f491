"""Drafted tokens kept per check, greedy, by texts a call: a trained model (drafting forced) against random weights.
Usage: ZHEN_HARDWARE=cpu_bf16=emulated acceptance_int4.py MODEL SRC [int8|int4g32|int4g128]: the draft int8 or fake-quantized
int4 (`fakequant.py`)."""
import sys, warnings, collections
import torch
warnings.simplefilter("ignore")
from transformers.utils import logging; logging.set_verbosity_error()
import zhen, zhen.fast_generation as fg, zhen.draft_decoding as dd
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast
from zhen.data import load_parallel
from zhen.evaluation import parallel_columns
torch.set_num_threads(2)
path = sys.argv[1]; src = sys.argv[2] if len(sys.argv) > 2 else "en"; tgt = "zh" if src == "en" else "en"
fg.drafting_pays = lambda *a, **k: True
sys.path.insert(0, "/work/main/benchmarks/results/2026-11-29-intel-amx-h")
import fakequant; fakequant.install(sys.argv[3] if len(sys.argv) > 3 else "int8")
dd.MAX_DRAFTED_SENTENCES = 8
tok = ZhenTokenizerFast.from_pretrained(path)
model = ZhenForConditionalGeneration.from_pretrained(path).eval()
texts = parallel_columns(load_parallel("../shared/data/tatoeba/valid.jsonl.gz"), 96)[src]
stats = collections.defaultdict(lambda: [0, 0, 0])
current = [1]
original = dd.DraftLength.update
def update(self, drafted, kept):
    s = stats[current[0]]; s[0] += drafted; s[1] += kept; s[2] += 1
    original(self, drafted, kept)
dd.DraftLength.update = update
for i in range(40):
    zhen.translate(texts[i % 8], model, tok, src_lang=src, tgt_lang=tgt, num_beams=1)
stats.clear()
for n in (1, 2, 4, 6, 8):
    current[0] = n
    for i in range(0, 48, n):
        zhen.translate(texts[i:i + n] if n > 1 else texts[i], model, tok, src_lang=src, tgt_lang=tgt, num_beams=1)
for n, (drafted, kept, checks) in sorted(stats.items()):
    print(f"{path} {src}->{tgt} {n} texts a call: {checks} checks, kept {kept}/{drafted} drafted tokens "
          f"({kept / drafted:.0%}), {kept / checks + 1:.2f} tokens a check")
