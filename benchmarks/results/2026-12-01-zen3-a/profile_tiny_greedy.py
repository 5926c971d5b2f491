import sys, time, torch
sys.path.insert(0, "benchmarks")
from zhen import ZhenConfig, ZhenForConditionalGeneration
from zhen.fast_generation import FastDecoder
torch.manual_seed(0)
cfg = ZhenConfig.from_preset("tiny", vocab_size=16000)
model = ZhenForConditionalGeneration(cfg).eval()
ids = torch.randint(10, 16000, (64, 20)); mask = torch.ones_like(ids)
kw = dict(forced_bos_token_id=5, num_beams=1, max_new_tokens=32, min_new_tokens=32)
with FastDecoder(model) as d:
    for i in range(3):
        t = time.perf_counter(); d.generate(ids, mask, **kw); print("step", time.perf_counter() - t, flush=True)
    from torch.profiler import profile
    with profile() as p:
        d.generate(ids, mask, **kw)
print(p.key_averages().table(sort_by="self_cpu_time_total", row_limit=20))
