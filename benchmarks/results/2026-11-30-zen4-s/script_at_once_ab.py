"""A fresh process decoding NB batches of 64 Tatoeba texts (the middle of the length order) int8 in two streams:
MODE=old compiles the layers' programs at once for any two batches side by side; MODE=new (SCRIPT_AT_ONCE_BATCHES_PER_STREAM)
only where each stream has more than two batches, fewer by the seconds rule. Prints the wall time and whether the model
ended compiled."""
import math, os, sys, time, warnings, torch
warnings.simplefilter("ignore")
torch.set_num_threads(2)
exec(open("benchmarks/results/2026-11-30-zen4-s/setup_batches.py").read())
n = int(os.environ["NB"]); mode = os.environ["MODE"]
if mode == "old":
    def old_map(self, function, batches, streams=1):
        if streams > 1 and len(batches) > 1:
            fg._SCRIPTING[self.model] = math.inf
        return fg.in_streams(function, batches, streams)
    fg.FastDecoder.map = old_map
start = max(0, len(batches) // 2 - n // 2)
sub = batches[start:start + n]
with torch.inference_mode():
    t = time.perf_counter()
    with fg.FastDecoder(q) as s:
        list(s.map(lambda kw: s.generate(**kw), sub, 2))
    wall = time.perf_counter() - t
print(mode, n, f"{wall*1e3:.0f}", "compiled" if fg.scripting_due(q) else "python")
