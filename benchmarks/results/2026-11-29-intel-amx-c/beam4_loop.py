import time, torch, warnings, sys
warnings.simplefilter("ignore")
from transformers.utils import logging; logging.set_verbosity_error()
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast, translate
from zhen.data import load_parallel
from zhen.evaluation import parallel_columns
torch.set_num_threads(2)
m = ZhenForConditionalGeneration.from_pretrained("/tmp/p/base-random").eval()
tok = ZhenTokenizerFast.from_pretrained("/tmp/p/base-random")
texts = parallel_columns(load_parallel("../shared/data/tatoeba/valid.jsonl.gz"), 16)["en"]
translate(texts[:1], m, tok, src_lang="en", tgt_lang="zh", num_beams=4)
s = time.perf_counter()
for t in texts:
    translate([t], m, tok, src_lang="en", tgt_lang="zh", num_beams=4)
print(f"{(time.perf_counter()-s)/len(texts)*1e3:.1f} ms a text", file=sys.stderr)
