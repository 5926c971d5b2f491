"""Two streams, three ways taking turns: pooled (last batches pooled too), pooled but each stream's last batch alone, each batch alone."""
import os, sys, time, torch, warnings, threading, statistics
warnings.simplefilter("ignore")
torch.set_num_threads(2)
exec(open("benchmarks/results/2026-11-30-zen4-w/setup_bs.py").read())
import zhen.pooled_tails as pt
M8 = q if os.environ.get("INT8", "1") == "1" else model
ends = {}
orig = pt._decode_stream
def traced(session, source, stop=None, closing=None):
    for x in orig(session, source, stop, closing):
        yield x
    ends[threading.get_ident()] = time.perf_counter()
pt._decode_stream = traced
ways = {"pooled, last pooled too": (True, 0), "pooled, last batch alone": (True, 1), "each batch alone": (False, 0)}
res = {k: [] for k in ways}
R = int(os.environ.get("ROUNDS", "8"))
for r in range(R):
    for name in (list(ways) if r % 2 == 0 else list(ways)[::-1]):
        flag, last = ways[name]; pt.UNPOOLED_LAST_BATCHES = last
        with torch.inference_mode(), fg.FastDecoder(M8, weights="auto", script_layers=True, pool_tails=flag) as dec:
            ends.clear(); t0 = time.perf_counter(); list(dec.generate_batches(batches, 2)); total = time.perf_counter() - t0
            e = sorted(v - t0 for v in ends.values())
            res[name].append((total, e[0], e[-1]))
base = statistics.median(x[0] for x in res["each batch alone"])
print(f"{'INT8' if M8 is q else 'bf16 session'}, {len(batches)} batches of {BS}, {N if 'N' in dir() else ''} sentences, two streams, {R} rounds")
for name, r in res.items():
    t = statistics.median(x[0] for x in r)
    print(f"{name:26s} total {1e3*t:.0f} ms ({base/t:.3f}x alone); first stream ends {1e3*statistics.median(x[1] for x in r):.0f}, gap {1e3*statistics.median(x[2]-x[1] for x in r):.0f} ms; rounds {[round(1e3*x[0]) for x in r]}")
