import os, sys, time, torch, warnings
warnings.simplefilter("ignore")
torch.set_num_threads(int(os.environ.get("THREADS", "1")))
exec(open("benchmarks/results/2026-11-30-zen4-s/setup_batches.py").read())
m = q if os.environ.get("INT8", "1") == "1" else model
orig = fg.greedy_search
def run(lookup):
    fg.greedy_search = lambda *a, **k: orig(*a, **k, lookup=lookup)
    return [dec.generate(**b) for b in batches]
def strip(s):
    s = list(s)
    if 2 in s[1:]: s = s[:s.index(2, 1) + 1]
    while s and s[-1] == tok.pad_token_id: s.pop()
    return s
with torch.inference_mode(), fg.FastDecoder(m, weights="auto") as dec:
    a = run(False); b = run(True)
    A = [strip(r) for x in a for r in x.tolist()]; B = [strip(r) for x in b for r in x.tolist()]
    print("same", sum(x == y for x, y in zip(A, B)), "of", len(A))
    for r in range(int(os.environ.get("ROUNDS", "4"))):
        t0 = time.perf_counter(); run(False); t1 = time.perf_counter(); run(True); t2 = time.perf_counter()
        print(f"plain {1e3*(t1-t0):.0f} ms  lookup {1e3*(t2-t1):.0f} ms  ratio {(t1-t0)/(t2-t1):.3f}", flush=True)
