"""zhen.translate one text a call, greedy and beam 4, the forced language code's position in the next pass (one pass
for the start token and it) or in a pass of its own (`DecoderSteps.passes_several` False), alternated in one process.
Usage: forced_token_ab.py CHECKPOINT [TEXTS] [ROUNDS]"""

import sys

sys.path.insert(0, "/work/main/benchmarks/results/2026-11-27-intel-session-reuse-mkl-packing")
from probes import alternate_per_call, checkpoint_and_pairs, each_way  # noqa: E402
from zhen import draft_decoding, fast_generation  # noqa: E402

draft_decoding.MIN_DECODER_WEIGHTS = 1 << 62  # the plain searches
model, tokenizer, rows = checkpoint_and_pairs(sys.argv[1])
count, rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 48, int(sys.argv[3]) if len(sys.argv) > 3 else 3
for beams in (1, 4):
    for direction, texts, options in each_way(model, tokenizer, rows, count, warm=0, num_beams=beams):
        results = alternate_per_call(fast_generation.DecoderSteps, "passes_several",
                                     {"own pass": False, "one pass": True}, texts, rounds=rounds, **options)  # fmt: skip
        own, one = min(results["own pass"]), min(results["one pass"])
        print(f"beams {beams} {direction}: own pass {own} ms, one pass {one} ms, {own / one:.3f}x; "
              f"same translations: {results['own pass_hash'] == results['one pass_hash']}")
