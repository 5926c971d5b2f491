import os, sys, time, torch, warnings
warnings.simplefilter("ignore")
THREADS = int(os.environ.get("THREADS", "1")); STREAMS = int(os.environ.get("STREAMS", "1"))
torch.set_num_threads(THREADS)
exec(open("benchmarks/results/2026-11-30-zen4-w/setup_bs.py").read())
import zhen.pooled_tails as pt; pt.POOLED_BATCHES = int(os.environ.get("PB", "1")); pt.TAIL_SHARE = float(os.environ.get("TS", "0.25"))
M8 = q if os.environ.get("INT8", "1") == "1" else model
pad = M8.generation_config.pad_token_id
def today(dec): return list(dec.map(lambda b: dec.generate(**b), batches, STREAMS))
def pooled(dec): return list(dec.generate_batches(batches, STREAMS))
with torch.inference_mode(), fg.FastDecoder(M8, weights="auto", script_layers=True) as dec:
    a = today(dec); m = pooled(dec)
    same = diff = shape = 0
    for x, y in zip(a, m):
        shape += x.shape != y.shape
        for r in range(len(x)):
            xs = x[r].tolist(); ys = y[r].tolist()
            same += xs == ys; diff += xs != ys
    print("same", same, "different", diff, "shape differs", shape)
    ta, tm = [], []
    for r in range(int(os.environ.get("ROUNDS", "5"))):
        t0 = time.perf_counter(); today(dec); ta.append(time.perf_counter() - t0)
        t0 = time.perf_counter(); pooled(dec); tm.append(time.perf_counter() - t0)
    ta.sort(); tm.sort()
    print(f"bs {BS} streams {STREAMS} int8 {os.environ.get('INT8','1')}: today {ta[len(ta)//2]*1e3:.0f} ms, pooled {tm[len(tm)//2]*1e3:.0f} ms: {ta[len(ta)//2]/tm[len(tm)//2]:.3f}x; rounds {[round(x*1e3) for x in ta]} {[round(x*1e3) for x in tm]}")
