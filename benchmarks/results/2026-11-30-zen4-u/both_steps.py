import os, sys, time, torch, warnings, collections
warnings.simplefilter("ignore")
torch.set_num_threads(1)
exec(open("benchmarks/results/2026-11-30-zen4-s/setup_batches.py").read())
import zhen.refilling as rf
srcs = [ids[i] for i in order]
mnt = [int(1.5 * len(x)) + 10 for x in srcs]
bos = tok.get_lang_id(tgt); cfg = q.generation_config
rec = collections.defaultdict(list)
f = rf.RefillingSteps.step_at
def w(self, t, c):
    t0 = time.perf_counter(); r = f(self, t, c); rec["refill"].append((len(t), c + 1, self.source_bias.shape[-1], time.perf_counter() - t0)); return r
rf.RefillingSteps.step_at = w
g = fg.DecoderSteps.step
def w2(self, t, p):
    t0 = time.perf_counter(); r = g(self, t, p); rec["plain"].append((len(t), p + 1, self.source_bias.shape[-1], time.perf_counter() - t0)); return r
fg.DecoderSteps.step = w2
with torch.inference_mode(), fg.FastDecoder(q, weights="auto") as dec:
    for _ in range(2):
        rec.clear()
        for b in batches: dec.generate(**b)
        list(rf.refilling_greedy_search(dec, srcs, mnt, 64, tok.pad_token_id, cfg.eos_token_id, cfg.decoder_start_token_id, bos, None))
for k, v in rec.items():
    full = [x for x in v if x[0] == 64]
    print(k, "steps", len(v), f"total {1e3*sum(x[3] for x in v):.0f} ms", "64-row steps", len(full), f"{1e3*sum(x[3] for x in full):.0f} ms", "mean window", sum(x[1] for x in full)/len(full), "mean source", sum(x[2] for x in full)/len(full))
    by = collections.defaultdict(list)
    for x in full: by[(x[1]//10*10, x[2]//10*10)].append(x[3])
    print("  ", {kk: (len(vv), round(1e6*sorted(vv)[len(vv)//2])) for kk, vv in sorted(by.items())})
