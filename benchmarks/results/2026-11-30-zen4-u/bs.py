import os, sys, time, warnings, statistics, torch
warnings.simplefilter("ignore")
torch.set_num_threads(1)
exec(open("benchmarks/results/2026-11-30-zen4-s/setup_batches.py").read())
from zhen.convert_ctranslate2 import CTranslate2Generator
g1 = CTranslate2Generator("/tmp/s38/ct2-int8", compute_type="int8", inter_threads=1, intra_threads=1)
def make(bs):
    out = []
    for s_ in range(0, len(order), bs):
        rows_ = order[s_:s_+bs]
        b_ = tok.pad({"input_ids": [ids[i] for i in rows_]}, return_tensors="pt")
        L_ = max(len(ids[i]) for i in rows_)
        out.append(dict(input_ids=b_["input_ids"], attention_mask=b_["attention_mask"], forced_bos_token_id=tok.get_lang_id(tgt), num_beams=1, max_new_tokens=int(1.5*L_)+10))
    return out
res = {}
with torch.inference_mode(), fg.FastDecoder(q, weights="auto") as dec:
    for bs in (32, 64, 128, 256):
        bb = make(bs)
        for b in bb: dec.generate(**b); g1.generate(**b)
        z, c = [], []
        for r in range(3):
            t0 = time.perf_counter()
            for b in bb: dec.generate(**b)
            t1 = time.perf_counter()
            for b in bb: g1.generate(**b)
            t2 = time.perf_counter()
            z.append(t1 - t0); c.append(t2 - t1)
        print(f"batch {bs}: zhen {1e3*min(z):.0f} ms  ct2 {1e3*min(c):.0f} ms  ratio {min(c)/min(z):.3f}", flush=True)
