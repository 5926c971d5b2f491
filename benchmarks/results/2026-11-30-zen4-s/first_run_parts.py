"""A fresh process's first 1,000 texts (two streams) against its second: time in the LM head's oneDNN packing and in
TorchScript compiles (summed over threads)."""
import os, sys, time, warnings, torch, functools
warnings.simplefilter("ignore")
torch.set_num_threads(2)
exec(open("benchmarks/results/2026-11-30-zen4-s/setup_batches.py").read())
import zhen.layer_steps as ls, zhen.quantization as zq
spent = {}
def timed(name, f):
    @functools.wraps(f)
    def g(*a, **k):
        t = time.perf_counter(); r = f(*a, **k); spent[name] = spent.get(name, 0) + time.perf_counter() - t; return r
    return g
ls.scripted = timed("scripted", ls.scripted)
zq.RowDispatchedLinear.many_rows_packing = timed("head onednn packing", zq.RowDispatchedLinear.many_rows_packing)
fg.kept_steps = timed("kept_steps", fg.kept_steps)
with torch.inference_mode():
    for run in range(2):
        spent.clear()
        t = time.perf_counter()
        with fg.FastDecoder(q) as s:
            list(s.map(lambda kw: s.generate(**kw), batches, 2))
        print(run, f"{(time.perf_counter()-t)*1e3:.0f} ms", {k: f"{v*1e3:.0f} ms" for k, v in spent.items()})
