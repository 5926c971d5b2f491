"""Base random, bf16 session (default), one thread, 4 batches of 64, greedy 32 new tokens: torch profiler by op."""
import sys, collections, torch
sys.path.insert(0, "benchmarks")
from torch.profiler import profile, ProfilerActivity
from common import zhen_model, source_batches, ZH
from zhen.fast_generation import FastDecoder
torch.set_num_threads(1)
torch.manual_seed(0)
model = zhen_model("base", dropout=0.0).eval()
batches = source_batches(512, 64, 32000)[-4:]
beams = int(sys.argv[1]) if len(sys.argv) > 1 else 1
with FastDecoder(model, script_layers=True) as d:
    run = lambda: [d.generate(b["input_ids"], b["attention_mask"], forced_bos_token_id=ZH, num_beams=beams, max_new_tokens=32, min_new_tokens=32) for b in batches]
    run(); run()
    import time; s = time.perf_counter(); run(); print("seconds", time.perf_counter() - s, "lengths", [b["input_ids"].shape for b in batches])
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        run()
events = prof.key_averages(group_by_input_shape=True)
print(events.table(sort_by="self_cpu_time_total", row_limit=45, max_name_column_width=40, max_shapes_column_width=70))
print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=40, max_name_column_width=45))
