"""zhen.translate one text a call, greedy, drafting off and on alternated in one process (MIN_DECODER_WEIGHTS:
infinite / 0), then where a drafted call's time goes: the draft's steps, the model's checks, what a check keeps.
Usage: drafted_ab.py CHECKPOINT [TEXTS] [ROUNDS]"""

import sys

sys.path.insert(0, "/work/main/benchmarks/results/2026-11-27-intel-session-reuse-mkl-packing")
import zhen  # noqa: E402
from probes import alternate_per_call, checkpoint_and_pairs, each_way, time_methods  # noqa: E402
from zhen import draft_decoding, fast_generation  # noqa: E402

draft_decoding.DRAFT_AFTER = 0  # steady state: the draft from the first drafted call on

model, tokenizer, rows = checkpoint_and_pairs(sys.argv[1])
count, rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 16, int(sys.argv[3]) if len(sys.argv) > 3 else 3
for direction, texts, options in each_way(model, tokenizer, rows, count, num_beams=1):
    results = alternate_per_call(draft_decoding, "MIN_DECODER_WEIGHTS", {"plain": 1 << 62, "drafted": 0}, texts,
                                 rounds=rounds, **options)  # fmt: skip
    print(f"{direction} ms a call", results)
    plain, drafted = min(results["plain"]), min(results["drafted"])
    print(f"{direction} best: plain {plain} ms, drafted {drafted} ms, {plain / drafted:.2f}x")

# Where a drafted call goes, and how many tokens a check keeps.
totals, kept = {}, []
original = draft_decoding.drafted_greedy_search


def counted(target, draft, **options):
    passes = {"n": 0}
    steps, step = target.steps, target.step
    target.steps = lambda *a: (passes.__setitem__("n", passes["n"] + 1), steps(*a))[1]
    target.step = lambda *a: (passes.__setitem__("n", passes["n"] + 1), step(*a))[1]
    out = original(target, draft, **options)
    kept.append((out.shape[1] - 1, passes["n"]))
    return out


fast_generation.drafted_greedy_search = counted
time_methods(totals, fast_generation.DecoderSteps, ["steps"])
time_methods(totals, draft_decoding, ["draft_next"])
draft_decoding.MIN_DECODER_WEIGHTS = 0
texts = [row["en"] for row in rows][:count]
import time  # noqa: E402

start = time.perf_counter()
for text in texts:
    zhen.translate(text, model=model, tokenizer=tokenizer, src_lang="en", tgt_lang="zh", num_beams=1)
wall = time.perf_counter() - start
tokens, passes = sum(k for k, _ in kept), sum(p for _, p in kept)
print(f"en->zh drafted: {tokens} tokens in {passes} passes of the model ({tokens / passes:.2f} a pass); "
      f"of {wall * 1e3 / count:.1f} ms a call: draft {totals['draft_next'] * 1e3 / count:.1f}, "
      f"checks {totals['steps'] * 1e3 / count:.1f}")  # fmt: skip
