"""Where a one-text beam-4 call's time goes at base, plain or drafted: the parts' ms a call.
Usage: beam_call_parts.py CHECKPOINT plain|drafted [TEXTS]"""

import sys
import time

sys.path.insert(0, "/work/main/benchmarks/results/2026-11-27-intel-session-reuse-mkl-packing")
import zhen  # noqa: E402
from probes import checkpoint_and_pairs, time_methods  # noqa: E402
from zhen import draft_decoding, fast_generation  # noqa: E402

draft_decoding.DRAFT_AFTER = 0
draft_decoding.MIN_DECODER_WEIGHTS = 0 if sys.argv[2] == "drafted" else 1 << 62
model, tokenizer, rows = checkpoint_and_pairs(sys.argv[1])
count = int(sys.argv[3]) if len(sys.argv) > 3 else 16
texts = [row["en"] for row in rows][:count]
options = dict(model=model, tokenizer=tokenizer, src_lang="en", tgt_lang="zh", num_beams=4)
for text in texts[:3]:
    zhen.translate(text, **options)
totals = {}
time_methods(totals, fast_generation.DecoderSteps, ["step", "steps", "logits"])
time_methods(totals, fast_generation.BeamSearch, ["choose"])
time_methods(totals, fast_generation.FastDecoder, ["encode"])
time_methods(totals, fast_generation.LineageCache, ["follow", "reorder"])
time_methods(totals, fast_generation, ["beam_log_probs"])
time_methods(totals, draft_decoding, ["tree_origins", "_drafted_slots", "draft_beams"])
start = time.perf_counter()
for text in texts:
    zhen.translate(text, **options)
wall = (time.perf_counter() - start) * 1e3 / count
parts = {k: round(v * 1e3 / count, 1) for k, v in totals.items() if not k.endswith(" #")}
print(sys.argv[2], f"{wall:.1f} ms a call:", parts)
print("  ms a call of each:", {k: round(v * 1e3 / totals[k + " #"], 2) for k, v in totals.items() if not k.endswith(" #")})
