"""zhen.translate one text a call, beam 4, drafted, with each longest draft (`MAX_DRAFT_TOKENS`) in turn, alternated in
one process; beam steps a check. Usage: beam_draft_sweep.py CHECKPOINT [TEXTS] [ROUNDS] [MAXIMA]"""

import sys

sys.path.insert(0, "/work/main/benchmarks/results/2026-11-27-intel-session-reuse-mkl-packing")
from probes import alternate_per_call, checkpoint_and_pairs, each_way  # noqa: E402
from zhen import draft_decoding  # noqa: E402

draft_decoding.DRAFT_AFTER, draft_decoding.MIN_DECODER_WEIGHTS = 0, 0
model, tokenizer, rows = checkpoint_and_pairs(sys.argv[1])
count, rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 16, int(sys.argv[3]) if len(sys.argv) > 3 else 2
maxima = [int(m) for m in sys.argv[4].split(",")] if len(sys.argv) > 4 else [2, 4, 6, 8, 12]
checks = {}
original_update = draft_decoding.DraftLength.update


def counted(self, drafted, kept):
    steps = checks.setdefault(draft_decoding.MAX_DRAFT_TOKENS, [])
    steps.append(kept + 1)
    original_update(self, drafted, kept)


draft_decoding.DraftLength.update = counted
for direction, texts, options in each_way(model, tokenizer, rows, count, num_beams=4):
    checks.clear()
    results = alternate_per_call(draft_decoding, "MAX_DRAFT_TOKENS", {str(m): m for m in maxima}, texts, rounds=rounds,
                                 **options)  # fmt: skip
    for m in maxima:
        print(f"{direction} longest draft {m}: best {min(results[str(m)])} ms a call {results[str(m)]}, "
              f"{sum(checks[m]) / len(checks[m]):.2f} beam steps a check, hash {results[f'{m}_hash']}")
