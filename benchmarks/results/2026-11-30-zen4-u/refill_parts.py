import os, sys, time, torch, warnings, collections
warnings.simplefilter("ignore")
torch.set_num_threads(1)
exec(open("benchmarks/results/2026-11-30-zen4-s/setup_batches.py").read())
import zhen.refilling as rf
srcs = [ids[i] for i in order]
mnt = [int(1.5 * len(x)) + 10 for x in srcs]
bos = tok.get_lang_id(tgt); cfg = q.generation_config
T = collections.Counter(); N = collections.Counter()
def timed(obj, name, key):
    f = getattr(obj, name)
    def w(*a, **k):
        t0 = time.perf_counter(); r = f(*a, **k); T[key] += time.perf_counter() - t0; N[key] += 1; return r
    setattr(obj, name, w)
timed(rf.RefillingSteps, "step_at", "step"); timed(rf.RefillingSteps, "next_tokens", "head"); timed(rf, "_start", "start"); timed(rf, "_shifted", "shift")
timed(fg.FastDecoder, "encode", "encode")
share = float(os.environ.get("SHARE", "0.125")); rf.REFILL_SHARE = share
with torch.inference_mode(), fg.FastDecoder(q, weights="auto") as dec:
    list(rf.refilling_greedy_search(dec, srcs, mnt, 64, tok.pad_token_id, cfg.eos_token_id, cfg.decoder_start_token_id, bos, None))
    T.clear(); N.clear()
    t0 = time.perf_counter()
    list(rf.refilling_greedy_search(dec, srcs, mnt, 64, tok.pad_token_id, cfg.eos_token_id, cfg.decoder_start_token_id, bos, None))
    print(f"share {share} total {1e3*(time.perf_counter()-t0):.0f} ms")
for k in T: print(k, N[k], f"{1e3*T[k]:.0f} ms")
