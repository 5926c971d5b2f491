"""Which layers' programs TorchScript compiles in a run of 1,000 int8 translations, and how long each takes."""
import os, sys, time, warnings, torch, functools
warnings.simplefilter("ignore")
torch.set_num_threads(1)
exec(open("benchmarks/results/2026-11-30-zen4-s/setup_batches.py").read())
import zhen.layer_steps as ls
orig = ls.scripted; log = []
def timed(steps, owner):
    t = time.perf_counter(); r = orig(steps, owner); log.append((type(steps).__name__, round((time.perf_counter() - t) * 1e3))); return r
ls.scripted = timed
with torch.inference_mode():
    t = time.perf_counter()
    with fg.FastDecoder(q, script_layers=True) as s:
        for b in batches: s.generate(**b)
    print(f"{(time.perf_counter()-t)*1e3:.0f} ms", log, "unpadded batches:", sum(bool(b['attention_mask'].all()) for b in batches))
