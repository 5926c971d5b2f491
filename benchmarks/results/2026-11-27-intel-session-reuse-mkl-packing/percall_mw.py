import sys, time, hashlib
import zhen, zhen.screened_argmax as sa
from probes import checkpoint_and_pairs
m, tok, rows = checkpoint_and_pairs(sys.argv[1])
default = sa.MIN_WEIGHT
for src, tgt in (("en", "zh"), ("zh", "en")):
    texts = [r[src] for r in rows]
    res = {}
    for r in range(3):
        for name, mw in (("off", 1 << 40), ("on", default)):
            sa.MIN_WEIGHT = mw
            t0 = time.perf_counter()
            out = [zhen.translate(t, m, tok, src_lang=src, tgt_lang=tgt, num_beams=1) for t in texts]
            ms = (time.perf_counter() - t0) / len(texts) * 1000
            res.setdefault(name, []).append(round(ms, 2))
            res[name + "_hash"] = hashlib.md5("\n".join(out).encode()).hexdigest()[:8]
    print(src, tgt, res)
