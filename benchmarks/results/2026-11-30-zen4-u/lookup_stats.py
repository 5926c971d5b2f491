import os, sys, time, torch, warnings, collections
warnings.simplefilter("ignore")
torch.set_num_threads(1)
exec(open("benchmarks/results/2026-11-30-zen4-s/setup_batches.py").read())
import zhen.draft_decoding as dd
C = collections.Counter()
op = dd.LookupDraft.propose
def prop(self, tokens, length, count, eos, going):
    g = op(self, tokens, length, count, eos, going)
    C["proposals" if g is not None else "none"] += 1
    C[f"rows{len(tokens)}"] += 1
    if g is not None: C["drafted"] += g.shape[1]
    return g
dd.LookupDraft.propose = prop
oc = dd.DraftLength.update
def upd(self, d, k): C["accepted"] += k; C["checks"] += 1; return oc(self, d, k)
dd.DraftLength.update = upd
T = collections.Counter()
orig = dd.drafted_greedy_search
def timed(*a, **k):
    t0 = time.perf_counter(); r = orig(*a, **k); T["tail"] += time.perf_counter() - t0; T["tail_tokens"] += (r.shape[1] - k["length"]); return r
dd.drafted_greedy_search = timed
with torch.inference_mode(), fg.FastDecoder(q, weights="auto") as dec:
    for b in batches: dec.generate(**b)
    C.clear(); T.clear()
    t0 = time.perf_counter()
    for b in batches: dec.generate(**b)
    print(f"total {1e3*(time.perf_counter()-t0):.0f} ms; tail {1e3*T['tail']:.0f} ms over {T['tail_tokens']} positions", dict(C))
