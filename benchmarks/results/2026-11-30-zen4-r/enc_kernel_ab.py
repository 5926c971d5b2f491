import sys, time, warnings, statistics, torch
warnings.simplefilter("ignore")
torch.set_num_threads(1)
import os
exec(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "setup_batches.py")).read())
import zhen.packing as pk
KERNEL = ['sdpa']
orig_ps = fg.pack_sources
def pack_sources(*a, **k):
    d = orig_ps(*a, **k); d['packed_layout'].attention_kernel = KERNEL[0]; return d
fg.pack_sources = pack_sources
res = {"sdpa": [], "matmul": []}
with torch.inference_mode(), fg.FastDecoder(q, script_layers=True) as s:
    for b in batches[:2]: s.encode(b["input_ids"], b["attention_mask"])
    outs = {}
    for r in range(9):
        for k in (("sdpa", "matmul") if r % 2 == 0 else ("matmul", "sdpa")):
            KERNEL[0] = k
            t = time.perf_counter()
            outs[k] = [s.encode(b["input_ids"], b["attention_mask"]) for b in batches]
            res[k].append(time.perf_counter() - t)
    d = max(float((a - b).abs().max()) for a, b in zip(outs["sdpa"], outs["matmul"]))
print({k: f"{statistics.median(v)*1e3:.1f} ms" for k, v in res.items()}, "paired sdpa/matmul", f"{statistics.median([a/b for a, b in zip(res['sdpa'], res['matmul'])]):.3f}", "max diff", d)
