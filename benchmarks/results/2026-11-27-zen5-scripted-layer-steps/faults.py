"""Two streams, tiny: tokens/s and page faults per run; `arena1` gives every thread glibc's one malloc arena.
`python faults.py int8|fp32 WEIGHTS BEAMS [arena1]`"""
import ctypes, resource, statistics as st, sys, time
if sys.argv[4:] == ["arena1"]:
    ctypes.CDLL("libc.so.6").mallopt(-8, 1)  # M_ARENA_MAX, before any thread starts
import torch
from zhen.fast_generation import FastDecoder
from tiny_models import batches, tiny_model, translate

mode, weights, beams = sys.argv[1], sys.argv[2], int(sys.argv[3])
torch.set_num_threads(2)
model, sources = tiny_model(mode), batches()


def run():
    with torch.inference_mode(), FastDecoder(model, weights=weights) as dec:
        faults, t0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt, time.perf_counter()
        list(dec.map(lambda batch: translate(dec, batch, beams), sources, streams=2))
        seconds = time.perf_counter() - t0
        return len(sources) * 64 * 32 / seconds, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults


run()
r = [run() for _ in range(3)]
print(sys.argv[1:], "2 streams %.0f tok/s, page faults per run %s" % (st.median(x[0] for x in r), [x[1] for x in r]))
