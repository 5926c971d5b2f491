import os, sys, time, torch, warnings
warnings.simplefilter("ignore")
torch.set_num_threads(int(os.environ.get("THREADS", "1")))
exec(open("benchmarks/results/2026-11-30-zen4-s/setup_batches.py").read())
from zhen.refilling import refilling_greedy_search
from zhen.pipeline_zhen import default_max_new_tokens
srcs = [ids[i] for i in order]
mnt = [int(1.5 * len(x)) + 10 for x in srcs]
m = q if os.environ.get("INT8", "1") == "1" else model
if m is model:
    for b in batches: pass
bos = tok.get_lang_id(tgt)
cfg = m.generation_config
with torch.inference_mode(), fg.FastDecoder(m, weights="auto") as dec:
    def plain():
        out = {}
        for k, b in enumerate(batches):
            seqs = dec.generate(**b)
            for j, s in enumerate(seqs.tolist()):
                out[k * 64 + j] = s
        return out
    def refill():
        return dict(refilling_greedy_search(dec, srcs, mnt, 64, tok.pad_token_id, cfg.eos_token_id, cfg.decoder_start_token_id, bos, None))
    a = plain(); b = refill()
    def strip(s):
        s = list(s)
        while s and s[-1] == tok.pad_token_id: s.pop()
        if 2 in s[1:]: s = s[:s.index(2, 1) + 1]
        return s
    same = sum(strip(a[i]) == strip(b[i]) for i in a)
    print("same", same, "of", len(a), "missing", len(a) - len(b))
    for i in list(a)[:3]: print(strip(a[i])[:12], strip(b[i])[:12])
    for r in range(int(os.environ.get("ROUNDS", "3"))):
        t0 = time.perf_counter(); plain(); t1 = time.perf_counter(); refill(); t2 = time.perf_counter()
        print(f"plain {1e3*(t1-t0):.0f} ms  refill {1e3*(t2-t1):.0f} ms  ratio {(t1-t0)/(t2-t1):.3f}")
