import sys, time, hashlib
import zhen, zhen.fast_generation as fg
from probes import checkpoint_and_pairs
m, tok, rows = checkpoint_and_pairs(sys.argv[1])
program = fg.FastDecoder.encoder_steps
forwards = lambda self, device: None
for beams in (1, 4):
    for src, tgt in (("en", "zh"), ("zh", "en")):
        texts = [r[src] for r in rows]
        res = {}
        for r in range(3):
            for name, f in (("forwards", forwards), ("program", program)):
                fg.FastDecoder.encoder_steps = f
                t0 = time.perf_counter()
                out = [zhen.translate(t, m, tok, src_lang=src, tgt_lang=tgt, num_beams=beams) for t in texts]
                res.setdefault(name, []).append(round((time.perf_counter() - t0) / len(texts) * 1000, 2))
                res[name + "_hash"] = hashlib.md5("\n".join(out).encode()).hexdigest()[:8]
        print(src, tgt, "beams", beams, res, flush=True)
