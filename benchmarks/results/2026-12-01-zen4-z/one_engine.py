# Run one engine's int8 greedy on the 16 Tatoeba batches for N rounds (for perf): argv engine direction rounds
import os, sys, tempfile, time
sys.path.insert(0, "benchmarks/results/2026-12-01-zen4-y")
import torch
from int8_batches import MODEL, greedy_batches, quantized as q
from zhen.convert_ctranslate2 import CTranslate2Generator, convert
from zhen.fast_generation import FastDecoder
engine, direction, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
batches = greedy_batches(direction)
if engine == "ct2":
    out = "/tmp/s48/ct2-int8"
    if not os.path.exists(out):
        convert(MODEL, out, quantization="int8")
    ct2 = CTranslate2Generator(out, compute_type="int8", inter_threads=1, intra_threads=1)
    run = lambda: [w() for w in [ct2.generate(**b, asynchronous=True) for b in batches]]
else:
    dec = FastDecoder(q, weights="auto").__enter__()
    run = lambda: list(dec.generate_batches(batches, 1))
with torch.inference_mode():
    run()
    open("/tmp/s48/ready", "w").write("1")
    t = time.perf_counter()
    for _ in range(rounds):
        run()
    print(engine, direction, "per round ms", round((time.perf_counter() - t) / rounds * 1000, 1), flush=True)
