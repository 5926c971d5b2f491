"""Tiny: one stream on one thread against two streams on two. `python scaling.py int8|fp32 WEIGHTS BEAMS`"""
import statistics as st, sys, time
import torch
from zhen.fast_generation import FastDecoder
from tiny_models import batches, tiny_model, translate

mode, weights, beams = sys.argv[1], sys.argv[2], int(sys.argv[3])
model, sources = tiny_model(mode), batches()


def run(streams, threads):
    torch.set_num_threads(threads)
    with torch.inference_mode(), FastDecoder(model, weights=weights) as dec:
        t0 = time.perf_counter()
        list(dec.map(lambda batch: translate(dec, batch, beams), sources, streams=streams))
        return len(sources) * 64 * 32 / (time.perf_counter() - t0)


run(1, 1), run(2, 2)
r1, r2 = [run(1, 1) for _ in range(3)], [run(2, 2) for _ in range(3)]
print(sys.argv[1:], "1 stream 1 thread %.0f, 2 streams %.0f, ratio %.2f" % (st.median(r1), st.median(r2), st.median(r2) / st.median(r1)))
