"""The encoder of padded batches in a bf16 session: the program over the packed tokens (bf16 products, float32 attention and norms) against the autocast forwards a bf16 session runs: largest difference and seconds (seven turns, medians)."""
import os, sys, time, warnings, statistics, torch
warnings.simplefilter("ignore")
torch.set_num_threads(int(os.environ.get("T", "1")))
exec(open("benchmarks/results/2026-11-30-zen4-s/setup_batches.py").read())
from zhen.packing import pack_sources, unpack
with torch.inference_mode(), fg.FastDecoder(model, weights="bf16", script_layers=True) as s:
    enc = model.get_encoder()
    padded = [b for b in batches if not bool(b["attention_mask"].all())]
    def program(b):
        packed = pack_sources(b["input_ids"], b["attention_mask"])
        steps = s.encoder_steps(b["input_ids"].device, True, packed["input_ids"].numel())
        h, pe = enc.embed(packed["input_ids"], None, packed["position_ids"])
        cos, sin = pe or (None, None)
        with torch.jit.optimized_execution(False):
            return unpack(steps(h, cos, sin, fg.attention_groups(packed, model.config.encoder_attention_heads)), b["attention_mask"])
    def forwards(b): return s.encode(b["input_ids"], b["attention_mask"], in_bf16=True, script_layers=True)
    a = [program(b) for b in padded]; f = [forwards(b) for b in padded]
    f32 = [s.encode(b["input_ids"], b["attention_mask"], script_layers=True) for b in padded] if False else None
    print("max |program - autocast forwards|", max(float((x - y.float()).abs().max()) for x, y in zip(a, f)), "dtype", f[0].dtype)
    res = {"program": [], "forwards": []}
    for r in range(7):
        for k in (("program", "forwards") if r % 2 == 0 else ("forwards", "program")):
            fn = program if k == "program" else forwards
            t = time.perf_counter(); [fn(b) for b in padded]; res[k].append(time.perf_counter() - t)
    print({k: f"{statistics.median(v)*1e3:.0f} ms" for k, v in res.items()}, "ratio", f"{statistics.median([b/a for a, b in zip(res['program'], res['forwards'])]):.3f}")
