import time, torch, warnings
warnings.simplefilter("ignore")
from transformers.utils import logging; logging.set_verbosity_error()
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast, translate
from zhen.data import load_parallel
from zhen.evaluation import parallel_columns
torch.set_num_threads(2)
m = ZhenForConditionalGeneration.from_pretrained("/tmp/p/base-random").eval()
tok = ZhenTokenizerFast.from_pretrained("/tmp/p/base-random")
texts = parallel_columns(load_parallel("../shared/data/tatoeba/valid.jsonl.gz"), 8)["en"]
out = translate(texts[:1], m, tok, src_lang="en", tgt_lang="zh", num_beams=4)
for t in texts[:3]:
    s = time.perf_counter(); o = translate([t], m, tok, src_lang="en", tgt_lang="zh", num_beams=4); print(f"{(time.perf_counter()-s)*1e3:.1f} ms", len(tok(o[0])["input_ids"]))
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
    for t in texts:
        translate([t], m, tok, src_lang="en", tgt_lang="zh", num_beams=4)
print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=25, max_name_column_width=40))
print(prof.key_averages(group_by_input_shape=True).table(sort_by="self_cpu_time_total", row_limit=15, max_name_column_width=30, max_shapes_column_width=60))
