import gzip, json, time, torch
import zhen
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast
from zhen.quantization import quantize_dynamic
torch.set_num_threads(1)
path = "/tmp/s51/small-cpu/model"
model = ZhenForConditionalGeneration.from_pretrained(path, dtype=torch.float32).eval()
tok = ZhenTokenizerFast.from_pretrained(path)
q = quantize_dynamic(model)
rows = [json.loads(l) for l in gzip.open("/work/shared/data/tatoeba/valid.jsonl.gz", "rt")][:1000]
texts = [r["en"] for r in rows]
run = lambda: zhen.translate(texts, model=q, tokenizer=tok, src_lang="en", tgt_lang="zh", streams=1, num_beams=1)
for _ in range(2): run()
t = time.perf_counter(); out = run(); print("wall", time.perf_counter() - t)
from torch.profiler import profile, ProfilerActivity
with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
    run()
ka = prof.key_averages()
tot = sum(k.count for k in ka)
print("ops total", tot)
print(prof.key_averages(group_by_input_shape=True).table(max_name_column_width=36, max_shapes_column_width=60, sort_by="self_cpu_time_total", row_limit=30))
