"""Opening a decoding session of an int8 copy of CHECKPOINT, amx_int8 on and off, twice each: its first session and
the next. Usage (repo root): first_session.py CHECKPOINT"""
import sys, time, warnings
warnings.simplefilter("ignore")
import torch
from zhen import ZhenForConditionalGeneration, hardware
from zhen.fast_generation import FastDecoder
from zhen.quantization import quantize_dynamic
torch.set_num_threads(2)
model = ZhenForConditionalGeneration.from_pretrained(sys.argv[1], dtype=torch.float32).eval()
for amx in ("on", "off", "on", "off"):
    with hardware.forced(amx_int8=amx):
        q = quantize_dynamic(model)
    t = time.perf_counter()
    with FastDecoder(q):
        pass
    first = time.perf_counter() - t
    t = time.perf_counter()
    with FastDecoder(q):
        pass
    print(f"amx_int8 {amx}: first session {first*1e3:.1f} ms, second {(time.perf_counter()-t)*1e3:.2f} ms")
