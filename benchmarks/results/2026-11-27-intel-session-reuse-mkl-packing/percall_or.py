import sys, time, hashlib
import zhen, zhen.screened_argmax as sa
from probes import checkpoint_and_pairs
m, tok, rows = checkpoint_and_pairs(sys.argv[1])
fast = sa.ScreenedArgmax.one_row
plain = lambda self, row, banned: self.many_rows(row[None], banned)
for src, tgt in (("en", "zh"), ("zh", "en")):
    texts = [r[src] for r in rows]
    res = {}
    for r in range(3):
        for name, f in (("many_rows", plain), ("one_row", fast)):
            sa.ScreenedArgmax.one_row = f
            t0 = time.perf_counter()
            out = [zhen.translate(t, m, tok, src_lang=src, tgt_lang=tgt, num_beams=1) for t in texts]
            res.setdefault(name, []).append(round((time.perf_counter() - t0) / len(texts) * 1000, 2))
            res[name + "_hash"] = hashlib.md5("\n".join(out).encode()).hexdigest()[:8]
    print(src, tgt, res)
