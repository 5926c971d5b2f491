# Per-batch times of zhen base greedy (one stream, one thread), the bench's 512 sentences, first pass against second.
import sys, time, torch, warnings
warnings.simplefilter("ignore")
sys.path.insert(0, "/work/main/benchmarks")
from common import zhen_model, source_batches, ZH
from zhen.fast_generation import FastDecoder
torch.set_num_threads(1)
model = zhen_model("base", "prenorm", "sdpa", 0.0).eval()
batches = source_batches(512, 64, 32000)
order = sorted(batches, key=lambda b: -b["input_ids"].numel())
kw = dict(forced_bos_token_id=ZH, num_beams=1, max_new_tokens=32, min_new_tokens=32)
with torch.inference_mode(), FastDecoder(model) as d:
    for b in batches[:2]:
        d.generate(b["input_ids"], b["attention_mask"], **kw)
    for r in range(2):
        times = []
        for b in order:
            t = time.perf_counter(); d.generate(b["input_ids"], b["attention_mask"], **kw); times.append(time.perf_counter() - t)
        print(f"pass {r}:", " ".join(f"{b['input_ids'].shape[1]}:{s:.2f}" for b, s in zip(order, times)), f"total {sum(times):.2f}", flush=True)
