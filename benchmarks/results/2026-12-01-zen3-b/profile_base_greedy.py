# One stream of a base greedy batch of 64 (24 source tokens, 32 new tokens) on one thread, torch profiler by op and shape.
import sys, time, torch
sys.path.insert(0, "/work/main/benchmarks")
from common import zhen_model, source_batches, ZH
from zhen.fast_generation import FastDecoder
torch.set_num_threads(1)
model = zhen_model("base", "prenorm", "sdpa", 0.0).eval()
torch.manual_seed(0)
ids = torch.randint(10, 32000, (64, 24)); mask = torch.ones_like(ids)
kw = dict(forced_bos_token_id=ZH, num_beams=1, max_new_tokens=32, min_new_tokens=32)
with FastDecoder(model) as d:
    for i in range(3):
        t = time.perf_counter(); d.generate(ids, mask, **kw); print("call", time.perf_counter() - t, flush=True)
    enc = model.get_encoder()
    t = time.perf_counter()
    with torch.no_grad():
        for i in range(3): enc(input_ids=ids, attention_mask=mask)
    print("encoder alone (model's forward)", (time.perf_counter() - t) / 3)
    from torch.profiler import profile
    with profile(record_shapes=True) as p:
        d.generate(ids, mask, **kw)
print(p.key_averages(group_by_input_shape=True).table(sort_by="self_cpu_time_total", row_limit=30, max_name_column_width=40, max_shapes_column_width=70))
