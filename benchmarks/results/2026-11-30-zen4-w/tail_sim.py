"""Estimate of merging greedy batches' tails (int8, small-cpu, 1000 Tatoeba, batches of 64, one thread)."""
import os, sys, time, torch, warnings, collections
warnings.simplefilter("ignore")
torch.set_num_threads(1)
exec(open("benchmarks/results/2026-11-30-zen4-s/setup_batches.py").read())
rec = []
orig = fg.DecoderSteps.step; orig_nt = fg.DecoderSteps.next_tokens
def step(self, t, p):
    self._t0 = time.perf_counter(); self._r = len(t); self._p = p; return orig(self, t, p)
def next_tokens(self, h, banned=None):
    r = orig_nt(self, h, banned); rec[-1].append((self._p, self._r, time.perf_counter() - self._t0)); return r
orig_gen = fg.FastDecoder.generate
def gen(self, **kw):
    rec.append([]); return orig_gen(self, **kw)
with torch.inference_mode(), fg.FastDecoder(q, weights="auto") as dec:
    for b in batches: dec.generate(**b)  # warm
    fg.DecoderSteps.step, fg.DecoderSteps.next_tokens, fg.FastDecoder.generate = step, next_tokens, gen
    totals = []
    for r in range(3):
        rec.clear(); t0 = time.perf_counter()
        for b in batches: dec.generate(**b)
        totals.append(time.perf_counter() - t0)
print("totals ms", [round(t*1e3) for t in totals])
cost = collections.defaultdict(list)
for b in rec:
    for p, r, t in b: cost[r].append(t)
med = {r: sorted(v)[len(v)//2] for r, v in cost.items()}
rows = sorted(med)
def c(r):
    if r in med: return med[r]
    lo = max([x for x in rows if x < r], default=rows[0]); hi = min([x for x in rows if x > r], default=rows[-1])
    if hi == lo: return med[lo] * r / lo
    return med[lo] + (med[hi] - med[lo]) * (r - lo) / (hi - lo)
today = sum(t for b in rec for _, _, t in b)
print(f"step time today {today*1e3:.0f} ms over {sum(len(b) for b in rec)} steps")
for T in (4, 8, 12, 16, 24, 32):
    pool = collections.Counter(); kept = 0.0
    for b in rec:
        parked = False
        for p, r, t in b:
            if not parked and r < T: parked = True
            if parked: pool[p] += r
            else: kept += c(r)
    pooled = sum(c(r) for r in pool.values())
    print(f"T={T:2d}: kept {kept*1e3:.0f} + pooled {pooled*1e3:.0f} ({len(pool)} steps, max rows {max(pool.values()) if pool else 0}) = {1e3*(kept+pooled):.0f} ms; saving {(today-kept-pooled)*1e3:.0f} ms of total {min(totals)*1e3:.0f}")
for r in rows: print(r, len(cost[r]), f"{med[r]*1e6:.0f} us")
