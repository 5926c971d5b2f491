# zhen base greedy (float32 session, two streams) on 1024 synthetic sentences in batches of 64 against 128, taking turns.
import sys, time, torch, warnings
warnings.simplefilter("ignore")
sys.path.insert(0, "/work/main/benchmarks")
from common import zhen_model, source_batches, ZH
from zhen.fast_generation import FastDecoder
from zhen.hardware import decoding_streams
torch.set_num_threads(2)
model = zhen_model("base", "prenorm", "sdpa", 0.0).eval()
batches = {bs: sorted(source_batches(1024, bs, 32000), key=lambda b: -b["input_ids"].numel()) for bs in (64, 128)}
kw = dict(forced_bos_token_id=ZH, num_beams=1, max_new_tokens=32, min_new_tokens=32)
rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
with torch.inference_mode(), FastDecoder(model) as d:
    for bs in (64, 128):
        list(d.map(lambda b: d.generate(b["input_ids"], b["attention_mask"], **kw), batches[bs][:2], 2))
    for r in range(rounds):
        for bs in ((64, 128) if r % 2 == 0 else (128, 64)):
            t = time.perf_counter()
            list(d.map(lambda b: d.generate(b["input_ids"], b["attention_mask"], **kw), batches[bs], decoding_streams("cpu")))
            s = time.perf_counter() - t
            print(f"round {r} batch {bs}: {s:.2f} s, {1024 * 32 / s:.0f} tok/s", flush=True)
