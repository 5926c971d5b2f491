import sys, time, copy, torch, warnings, statistics
sys.path.insert(0, "/work/main/benchmarks")
warnings.simplefilter("ignore")
from common import zhen_model, source_batches, SIZES
from zhen import hardware
from zhen.fast_generation import FastDecoder
size = sys.argv[1]; beams = int(sys.argv[2]); threads = int(sys.argv[3]); rows = int(sys.argv[4]) if len(sys.argv) > 4 else 64
torch.set_num_threads(threads)
model = zhen_model(size, "prenorm", "sdpa", 0.0).eval()
models = {"onednn": model, "mkl": copy.deepcopy(model)}
batch = source_batches(rows, rows, SIZES[size]["vocab"])[0]
decs = {}
for k in models:
    with hardware.forced(float32_packing=k):
        decs[k] = FastDecoder(models[k]).__enter__()
def once(k):
    d = decs[k]
    t = time.perf_counter()
    out = d.generate(batch["input_ids"], batch["attention_mask"], forced_bos_token_id=5, num_beams=beams, max_new_tokens=32, min_new_tokens=32)
    return time.perf_counter() - t, out
for k in decs: once(k)
times = {k: [] for k in decs}
for r in range(8):
    for k in decs:
        s, out = once(k)
        times[k].append(s)
med = {k: statistics.median(v) for k, v in times.items()}
print(size, "beams", beams, "threads", threads, "rows", rows, {k: round(v * 1000) for k, v in med.items()}, "ms; mkl speedup", round(med["onednn"] / med["mkl"], 3),
      "pairwise", sorted(round(a / b, 2) for a, b in zip(times["onednn"], times["mkl"])))
