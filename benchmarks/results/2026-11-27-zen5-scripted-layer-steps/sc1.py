"""Two decoding streams, tiny: the layers' forwards, the program in Python, compiled (optimizing executor), compiled
(plain interpreter). `python sc1.py int8|fp32 WEIGHTS BEAMS [fixed]`"""
import contextlib, statistics as st, sys, time
import torch
from zhen.fast_generation import FastDecoder
from tiny_models import batches, tiny_model, translate

mode, weights, beams = sys.argv[1], sys.argv[2], int(sys.argv[3])
torch.set_num_threads(2)
model, sources = tiny_model(mode), batches(fixed=sys.argv[4:] == ["fixed"])
CONFIGS = {"modules": dict(inline_layers=False), "python": dict(script_layers=False), "script": {}, "script-noopt": {}}


def run(name):
    def plain():
        return torch.jit.optimized_execution(False) if name == "script-noopt" else contextlib.nullcontext()

    with torch.inference_mode(), FastDecoder(model, weights=weights, **CONFIGS[name]) as dec:
        def one(batch):
            with plain():
                return translate(dec, batch, beams)
        t0 = time.perf_counter()
        outs = list(dec.map(one, sources, streams=2))
        return outs, len(sources) * 64 * 32 / (time.perf_counter() - t0)


for n in CONFIGS:
    run(n)
rates = {n: [] for n in CONFIGS}
for r in range(3):
    ref = None
    for n in CONFIGS:
        o, rate = run(n)
        rates[n].append(rate)
        ref = ref or o
        assert all(torch.equal(x, y) for x, y in zip(ref, o)), n
print(sys.argv[1:], " ".join(f"{n} {st.median(v):.0f}" for n, v in rates.items()))
