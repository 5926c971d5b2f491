"""zhen.translate one text a call, greedy, drafted, with DRAFT_TOKENS 2-8 alternated in one process.
Usage: draft_tokens_sweep.py CHECKPOINT [TEXTS] [ROUNDS] [DIRECTION: en-zh]"""

import sys

sys.path.insert(0, "/work/main/benchmarks/results/2026-11-27-intel-session-reuse-mkl-packing")
import zhen  # noqa: E402
from probes import alternate_per_call, checkpoint_and_pairs  # noqa: E402
from zhen import draft_decoding  # noqa: E402

model, tokenizer, rows = checkpoint_and_pairs(sys.argv[1])
count, rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 16, int(sys.argv[3]) if len(sys.argv) > 3 else 3
source, target = (sys.argv[4] if len(sys.argv) > 4 else "en-zh").split("-")
draft_decoding.MIN_DECODER_WEIGHTS = draft_decoding.DRAFT_AFTER = 0
texts = [row[source] for row in rows][:count]
options = dict(model=model, tokenizer=tokenizer, src_lang=source, tgt_lang=target, num_beams=1)
for text in texts[:3]:
    zhen.translate(text, **options)
variants = {str(k): k for k in (2, 3, 4, 5, 6, 8)}
results = alternate_per_call(draft_decoding, "DRAFT_TOKENS", variants, texts, rounds=rounds, **options)
for name in variants:
    print(f"{source}->{target} DRAFT_TOKENS {name}: best {min(results[name])} ms a call {results[name]}, "
          f"translations {results[name + '_hash']}")
