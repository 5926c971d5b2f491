import os, sys, time, torch, warnings, collections
warnings.simplefilter("ignore")
torch.set_num_threads(1)
exec(open("benchmarks/results/2026-11-30-zen4-s/setup_batches.py").read())
import zhen.refilling as rf
srcs = [ids[i] for i in order]
mnt = [int(1.5 * len(x)) + 10 for x in srcs]
bos = tok.get_lang_id(tgt); cfg = q.generation_config
rec = []
f = rf.RefillingSteps.step_at
def w(self, t, c):
    rec.append(sorted((c + 1 - self.starts).tolist())); return f(self, t, c)
rf.RefillingSteps.step_at = w
with torch.inference_mode(), fg.FastDecoder(q, weights="auto") as dec:
    list(rf.refilling_greedy_search(dec, srcs, mnt, 64, tok.pad_token_id, cfg.eos_token_id, cfg.decoder_start_token_id, bos, None))
single = sum(len(a) * max(a) for a in rec); own = sum(sum(a) for a in rec)
def groups(a, g):
    n = len(a); out = 0
    for k in range(g):
        part = a[k * n // g:(k + 1) * n // g]
        if part: out += len(part) * max(part)
    return out
print("steps", len(rec), "row-columns: single window", single, "own", own, {g: groups(a_, g) if False else sum(groups(a, g) for a in rec) for g in (2, 3, 4, 8)} if (a_ := None) is None else 0)
# plain
rec2 = []
g = fg.DecoderSteps.step
def w2(self, t, p):
    rec2.append(len(t) * (p + 1)); return g(self, t, p)
fg.DecoderSteps.step = w2
with torch.inference_mode(), fg.FastDecoder(q, weights="auto") as dec:
    for b in batches: dec.generate(**b)
print("plain row-columns", sum(rec2))
