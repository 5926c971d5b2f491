import sys, warnings, torch
warnings.simplefilter("ignore")
from transformers.utils import logging; logging.set_verbosity_error()
import zhen
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast, hardware
from zhen.fast_generation import FastDecoder
from zhen.data import load_parallel
from zhen.evaluation import parallel_columns
torch.set_num_threads(2)
path = sys.argv[1]; n = int(sys.argv[2]); beams = int(sys.argv[3])
tok = ZhenTokenizerFast.from_pretrained(path); m = ZhenForConditionalGeneration.from_pretrained(path).eval()
pairs = parallel_columns(load_parallel("../shared/data/tatoeba/valid.jsonl.gz"), n)
new = FastDecoder.encoder_steps
def old(self, device): return None if self.weights == "bf16" else new(self, device)
for src, tgt in (("en", "zh"), ("zh", "en")):
    res = {}
    with hardware.forced(cpu_bf16="emulated"):
        res["fp32"] = [zhen.translate(t, m, tok, src_lang=src, tgt_lang=tgt, num_beams=beams) for t in pairs[src]]
    FastDecoder.encoder_steps = old
    res["old"] = [zhen.translate(t, m, tok, src_lang=src, tgt_lang=tgt, num_beams=beams) for t in pairs[src]]
    FastDecoder.encoder_steps = new
    res["new"] = [zhen.translate(t, m, tok, src_lang=src, tgt_lang=tgt, num_beams=beams) for t in pairs[src]]
    agree = lambda a, b: sum(x == y for x, y in zip(res[a], res[b]))
    print(f"{src}->{tgt} beam {beams}, {n} texts: old==fp32 {agree('old','fp32')}, new==fp32 {agree('new','fp32')}, old==new {agree('old','new')}")
