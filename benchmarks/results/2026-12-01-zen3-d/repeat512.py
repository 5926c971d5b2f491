# zhen base greedy, the bench's 512 sentences in batches of 64 (two streams), timed three times after the bench's warm-up.
import sys, time, torch, warnings
warnings.simplefilter("ignore")
sys.path.insert(0, "/work/main/benchmarks")
from common import zhen_model, source_batches, ZH
from zhen.fast_generation import FastDecoder
from zhen.hardware import decoding_streams
torch.set_num_threads(2)
n = int(sys.argv[1]) if len(sys.argv) > 1 else 512
model = zhen_model("base", "prenorm", "sdpa", 0.0).eval()
batches = source_batches(n, 64, 32000)
print("source widths", [b["input_ids"].shape[1] for b in batches])
order = sorted(batches, key=lambda b: -b["input_ids"].numel())
kw = dict(forced_bos_token_id=ZH, num_beams=1, max_new_tokens=32, min_new_tokens=32)
with torch.inference_mode(), FastDecoder(model) as d:
    def run(bs):
        t = time.perf_counter()
        list(d.map(lambda b: d.generate(b["input_ids"], b["attention_mask"], **kw), bs, decoding_streams("cpu")))
        return time.perf_counter() - t
    print("warm-up", run(batches[:2]), flush=True)
    for r in range(3):
        s = run(order)
        print(f"run {r}: {s:.2f} s, {n * 32 / s:.0f} tok/s", flush=True)
