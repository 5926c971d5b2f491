"""zhen.translate one text a call, beam 4, drafting off and on alternated in one process (MIN_DECODER_WEIGHTS:
infinite / 0), then how many beam steps a pass of the model takes and where a drafted call's time goes.
Usage: drafted_beams_ab.py CHECKPOINT [TEXTS] [ROUNDS]"""

import sys
import time

sys.path.insert(0, "/work/main/benchmarks/results/2026-11-27-intel-session-reuse-mkl-packing")
import zhen  # noqa: E402
from probes import alternate_per_call, checkpoint_and_pairs, each_way, time_methods  # noqa: E402
from zhen import draft_decoding, fast_generation  # noqa: E402

draft_decoding.DRAFT_AFTER = 0  # steady state: the draft from the first drafted call on

model, tokenizer, rows = checkpoint_and_pairs(sys.argv[1])
count, rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 16, int(sys.argv[3]) if len(sys.argv) > 3 else 3
for direction, texts, options in each_way(model, tokenizer, rows, count, num_beams=4):
    results = alternate_per_call(draft_decoding, "MIN_DECODER_WEIGHTS", {"plain": 1 << 62, "drafted": 0}, texts,
                                 rounds=rounds, **options)  # fmt: skip
    print(f"{direction} ms a call", results)
    plain, drafted = min(results["plain"]), min(results["drafted"])
    print(f"{direction} best: plain {plain} ms, drafted {drafted} ms, {plain / drafted:.2f}x")

# Where a drafted call goes, and how many beam steps a pass of the model takes.
totals = {}
time_methods(totals, fast_generation.DecoderSteps, ["steps", "logits"])
time_methods(totals, draft_decoding, ["draft_beams"])
draft_decoding.MIN_DECODER_WEIGHTS = 0
passes = []
original_update = draft_decoding.DraftLength.update
draft_decoding.DraftLength.update = lambda self, drafted, kept: (passes.append(kept + 1),
                                                                 original_update(self, drafted, kept))[1]  # fmt: skip
texts = [row["en"] for row in rows][:count]
start = time.perf_counter()
for text in texts:
    zhen.translate(text, model=model, tokenizer=tokenizer, src_lang="en", tgt_lang="zh", num_beams=4)
wall = time.perf_counter() - start
print(f"en->zh drafted: {sum(passes)} beam steps in {len(passes)} checks ({sum(passes) / len(passes):.2f} a check, "
      f"the last step of a search counted as kept); of {wall * 1e3 / count:.1f} ms a call: draft "
      f"{totals['draft_beams'] * 1e3 / count:.1f}, checks {totals['steps'] * 1e3 / count:.1f} (the draft's "
      f"catch-up passes included), logits {totals['logits'] * 1e3 / count:.1f} (both models)")  # fmt: skip
