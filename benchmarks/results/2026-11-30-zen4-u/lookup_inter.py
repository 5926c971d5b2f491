import os, sys, time, torch, warnings, statistics
warnings.simplefilter("ignore")
torch.set_num_threads(1)
exec(open("benchmarks/results/2026-11-30-zen4-s/setup_batches.py").read())
m = q if os.environ.get("INT8", "1") == "1" else model
orig = fg.greedy_search
R = int(os.environ.get("ROUNDS", "7"))
with torch.inference_mode(), fg.FastDecoder(m, weights="auto") as dec:
    times = {False: [[] for _ in batches], True: [[] for _ in batches]}
    for r in range(R + 1):
        for i, b in enumerate(batches):
            for lk in ((False, True) if r % 2 else (True, False)):
                fg.greedy_search = lambda *a, **k: orig(*a, **k, lookup=lk)
                t0 = time.perf_counter(); dec.generate(**b); t = time.perf_counter() - t0
                if r: times[lk][i].append(t)
    p = sum(statistics.median(x) for x in times[False]); l = sum(statistics.median(x) for x in times[True])
    print(f"{src}-{tgt} sum of per-batch medians over {R} rounds: plain {1e3*p:.0f} ms  lookup {1e3*l:.0f} ms  ratio {p/l:.3f}")
    print(" per batch ratio:", " ".join(f"{statistics.median(a)/statistics.median(b):.2f}" for a, b in zip(times[False], times[True])))
