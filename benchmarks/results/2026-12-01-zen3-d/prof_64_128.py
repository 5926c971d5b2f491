# One thread: zhen base greedy on 128 sentences as two batches of 64 against one of 128 (24 source tokens, 32 new),
# torch profiler by op and shape.
import sys, time, torch
sys.path.insert(0, "/work/main/benchmarks")
from common import zhen_model, ZH
from zhen.fast_generation import FastDecoder
from torch.profiler import profile
torch.set_num_threads(1)
model = zhen_model("base", "prenorm", "sdpa", 0.0).eval()
torch.manual_seed(0)
ids = torch.randint(10, 32000, (128, 24)); mask = torch.ones_like(ids)
kw = dict(forced_bos_token_id=ZH, num_beams=1, max_new_tokens=32, min_new_tokens=32)
with torch.inference_mode(), FastDecoder(model) as d:
    halves = lambda: [d.generate(ids[i:i + 64], mask[i:i + 64], **kw) for i in (0, 64)]
    whole = lambda: d.generate(ids, mask, **kw)
    for f in (halves, whole, halves, whole): f()
    for r in range(2):
        for name, f in (("2x64", halves), ("1x128", whole)):
            t = time.perf_counter(); f(); print(name, round(time.perf_counter() - t, 2), flush=True)
    for name, f in (("2x64", halves), ("1x128", whole)):
        with profile(record_shapes=True) as p:
            f()
        print("=====", name)
        print(p.key_averages(group_by_input_shape=True).table(sort_by="self_cpu_time_total", row_limit=16, max_name_column_width=36, max_shapes_column_width=60))
