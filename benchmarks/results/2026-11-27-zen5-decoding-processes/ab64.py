import os, sys, time, torch, warnings
warnings.filterwarnings("ignore")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from common import zhen_model, source_batches
from zhen.fast_generation import FastDecoder
torch.set_num_threads(2)
precision, beams = sys.argv[1], int(sys.argv[2])
model = zhen_model("base", "prenorm", "sdpa", 0.0).eval()
if precision == "int8":
    from zhen.quantization import quantize_dynamic
    model = quantize_dynamic(model)
b32 = sorted(source_batches(256, 32, 32000), key=lambda b: -b["input_ids"].numel())
b64 = sorted(source_batches(256, 64, 32000), key=lambda b: -b["input_ids"].numel())
with torch.inference_mode(), FastDecoder(model) as dec:
    one = lambda b: dec.generate(b["input_ids"], b["attention_mask"], forced_bos_token_id=5, num_beams=beams, max_new_tokens=32, min_new_tokens=32)
    runs = {"streams2x32": lambda: list(dec.map(one, b32, 2)), "one64": lambda: [one(b) for b in b64]}
    for f in runs.values(): f()
    res = {k: [] for k in runs}
    for _ in range(5):
        for k, f in runs.items():
            t = time.perf_counter(); f(); res[k].append(256 * 32 / (time.perf_counter() - t))
print(precision, "beam", beams, " ".join(f"{k}: " + "/".join(f"{v:.0f}" for v in vs) for k, vs in res.items()),
      f"median ratio {sorted(res['one64'])[2] / sorted(res['streams2x32'])[2]:.3f}", flush=True)
