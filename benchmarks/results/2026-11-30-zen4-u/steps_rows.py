import os, sys, time, torch, warnings, collections
warnings.simplefilter("ignore")
torch.set_num_threads(1)
exec(open("benchmarks/results/2026-11-30-zen4-s/setup_batches.py").read())
rec = []
orig = fg.DecoderSteps.step
def step(self, t, p):
    t0 = time.perf_counter(); h = orig(self, t, p); rec.append((len(t), time.perf_counter() - t0)); return h
with torch.inference_mode(), fg.FastDecoder(q, weights="auto") as dec:
    for b in batches: dec.generate(**b)  # warm
    rec.clear()
    fg.DecoderSteps.step = step
    t0 = time.perf_counter()
    for b in batches: dec.generate(**b)
    total = time.perf_counter() - t0
fg.DecoderSteps.step = orig
by = collections.defaultdict(list)
for r, t in rec: by[r].append(t)
print(f"total {total*1e3:.0f} ms; steps {len(rec)}; step time {sum(t for _, t in rec)*1e3:.0f} ms; row-steps {sum(r for r, _ in rec)}")
for r in sorted(by): print(r, len(by[r]), f"{sorted(by[r])[len(by[r])//2]*1e6:.0f} us")
