"""One thread, one batch of 64 × 20-token sources, tiny: PyTorch's profile of a decoding run. `python prof.py int8|fp32 WEIGHTS BEAMS`"""
import sys, time
import torch
from zhen.fast_generation import FastDecoder
from tiny_models import batches, tiny_model, translate

mode, weights, beams = sys.argv[1], sys.argv[2], int(sys.argv[3])
torch.set_num_threads(1)
model, batch = tiny_model(mode), batches(fixed=True)[0]
with torch.inference_mode(), FastDecoder(model, weights=weights) as dec:
    translate(dec, batch, beams), translate(dec, batch, beams)
    t = time.perf_counter()
    translate(dec, batch, beams)
    print("seconds", time.perf_counter() - t)
    with torch.profiler.profile() as p:
        translate(dec, batch, beams)
print(p.key_averages().table(sort_by="self_cpu_time_total", row_limit=25))
