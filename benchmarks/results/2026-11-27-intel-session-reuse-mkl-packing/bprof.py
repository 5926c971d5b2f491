import sys, time, torch, warnings
sys.path.insert(0, "/work/main/benchmarks")
warnings.simplefilter("ignore")
from common import zhen_model, source_batches, SIZES
from zhen.fast_generation import FastDecoder
torch.set_num_threads(1)
model = zhen_model("base", "prenorm", "sdpa", 0.0).eval()
b = source_batches(256, 64, SIZES["base"]["vocab"])[2]
with torch.inference_mode(), FastDecoder(model) as dec:
    go = lambda: dec.generate(b["input_ids"], b["attention_mask"], forced_bos_token_id=5, num_beams=1, max_new_tokens=32, min_new_tokens=32)
    go(); go()
    t = time.perf_counter(); go(); print("one batch s", time.perf_counter() - t)
    from torch.profiler import profile, ProfilerActivity
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as p:
        go()
    print(p.key_averages(group_by_input_shape=False).table(sort_by="self_cpu_time_total", row_limit=25, max_name_column_width=40))
