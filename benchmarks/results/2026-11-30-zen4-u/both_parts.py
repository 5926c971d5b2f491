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
timed(fg.DecoderSteps, "step", "step"); timed(rf.RefillingSteps, "step_at", "step")
timed(fg.DecoderSteps, "next_tokens", "head"); timed(fg.FastDecoder, "encode", "encode"); timed(fg.DecoderSteps, "keep", "keep")
timed(rf, "_shifted", "shift"); timed(rf.RefillingSteps, "start", "start-write")
timed(fg.FastDecoder, "decoder_steps", "decoder_steps")
with torch.inference_mode(), fg.FastDecoder(q, weights="auto") as dec:
    for r in range(3):
        for name in ("plain", "refill"):
            T.clear(); N.clear(); t0 = time.perf_counter()
            if name == "plain":
                for b in batches: dec.generate(**b)
            else:
                list(rf.refilling_greedy_search(dec, srcs, mnt, 64, tok.pad_token_id, cfg.eos_token_id, cfg.decoder_start_token_id, bos, None))
            tot = time.perf_counter() - t0
            if r: print(name, f"total {1e3*tot:.0f}", " ".join(f"{k} {N[k]}:{1e3*T[k]:.0f}" for k in sorted(T)), f"rest {1e3*(tot - sum(T[k] for k in T if k not in ('encode','start-write'))):.0f}")
