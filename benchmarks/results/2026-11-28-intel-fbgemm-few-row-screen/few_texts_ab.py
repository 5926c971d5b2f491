"""`zhen.translate` greedy, a few texts a call (the default float32 session), the screen's few-row product by FBGEMM's
packed weight (`FEW_ROWS` 8, now) against `torch._int_mm` alone (`FEW_ROWS` 0, before), alternated in one process:
ms a call per round and a hash of the translations. 2 threads.

    python few_texts_ab.py MODEL TEXTS_A_CALL [CALLS] [ROUNDS]
"""
import hashlib
import sys
import time

sys.path.insert(0, __file__.rsplit("/", 2)[0] + "/2026-11-27-intel-session-reuse-mkl-packing")
from probes import checkpoint_and_pairs  # noqa: E402

import zhen  # noqa: E402
import zhen.screened_argmax as screened_argmax  # noqa: E402

model_dir, per_call = sys.argv[1], int(sys.argv[2])
calls = int(sys.argv[3]) if len(sys.argv) > 3 else 12
rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 3
model, tokenizer, rows = checkpoint_and_pairs(model_dir, per_call * calls)
for src, tgt in (("en", "zh"), ("zh", "en")):
    texts = [row[src] for row in rows]
    batches = [texts[i : i + per_call] for i in range(0, len(texts), per_call)]
    results = {}
    for r in range(rounds + 1):  # the first round warms up
        for name, few_rows in (("_int_mm alone (before)", 0), ("FBGEMM packed up to 8 rows", 8)):
            screened_argmax.FEW_ROWS = few_rows
            start = time.perf_counter()
            out = [t for batch in batches for t in zhen.translate(batch, model, tokenizer, src_lang=src, tgt_lang=tgt,
                                                                  num_beams=1)]  # fmt: skip
            ms = (time.perf_counter() - start) / len(batches) * 1000
            if r:
                results.setdefault(name, []).append(round(ms, 2))
                results[name + " hash"] = hashlib.md5("\n".join(out).encode()).hexdigest()[:8]
    print(f"{model_dir} {src}->{tgt}, {per_call} texts a call, {len(batches)} calls: {results}")
    before, after = (sorted(v)[len(v) // 2] for k, v in results.items() if not k.endswith("hash"))
    print(f"  median ms a call: before {before}, now {after}: {before / after:.3f}x")
