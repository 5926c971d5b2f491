import sys, time, hashlib, json
import zhen
from probes import checkpoint_and_pairs
m, tok, rows = checkpoint_and_pairs(sys.argv[1])
out = {}
for beams in (1, 4):
    for src, tgt in (("en", "zh"), ("zh", "en")):
        texts = [r[src] for r in rows]
        for t in texts[:4]: zhen.translate(t, m, tok, src_lang=src, tgt_lang=tgt, num_beams=beams)
        best = 1e9
        for _ in range(2):
            t0 = time.perf_counter()
            res = [zhen.translate(t, m, tok, src_lang=src, tgt_lang=tgt, num_beams=beams) for t in texts]
            best = min(best, (time.perf_counter() - t0) / len(texts) * 1000)
        out[f"{src}-{tgt} b{beams}"] = (round(best, 2), hashlib.md5("\n".join(res).encode()).hexdigest()[:8])
print(json.dumps(out))
