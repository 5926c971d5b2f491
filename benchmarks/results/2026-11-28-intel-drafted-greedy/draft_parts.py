"""Which projections the draft takes in int8: all of the decoder's (what zhen does) or only the feed-forward ones
(attention's float32 projections shared with the model, as they are). One variant a process (argument 'all' /
'mlp'); zhen.translate one text a call, greedy, plain and drafted alternated, with the tokens a check keeps.
Usage: draft_parts.py CHECKPOINT all|mlp [TEXTS] [ROUNDS]"""

import sys

sys.path.insert(0, "/work/main/benchmarks/results/2026-11-27-intel-session-reuse-mkl-packing")
import zhen  # noqa: E402
from probes import alternate_per_call, checkpoint_and_pairs  # noqa: E402
from zhen import draft_decoding, fast_generation  # noqa: E402

draft_decoding.DRAFT_AFTER = 0
if sys.argv[2] == "mlp":
    every = draft_decoding._drafted_linears
    draft_decoding._drafted_linears = lambda model, originals: {
        name: module for name, module in every(model, originals).items() if ".mlp." in name
    }
model, tokenizer, rows = checkpoint_and_pairs(sys.argv[1])
count, rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 16, int(sys.argv[4]) if len(sys.argv) > 4 else 3
kept = []
original = draft_decoding.drafted_greedy_search


def counted(target, draft, **options):
    checks = {"n": 0}
    steps = target.steps
    target.steps = lambda *a: (checks.__setitem__("n", checks["n"] + 1), steps(*a))[1]
    out = original(target, draft, **options)
    kept.append((out.shape[1] - 1, checks["n"]))
    return out


fast_generation.drafted_greedy_search = counted
texts = [row["en"] for row in rows][:count]
options = dict(model=model, tokenizer=tokenizer, src_lang="en", tgt_lang="zh", num_beams=1)
for text in texts[:3]:
    zhen.translate(text, **options)
kept.clear()
results = alternate_per_call(draft_decoding, "MIN_DECODER_WEIGHTS", {"plain": 1 << 62, "drafted": 0}, texts,
                             rounds=rounds, **options)  # fmt: skip
plain, drafted = min(results["plain"]), min(results["drafted"])
tokens, checks = sum(k for k, _ in kept), sum(c for _, c in kept)
print(f"int8 {sys.argv[2]}: plain {plain} ms, drafted {drafted} ms a call, {plain / drafted:.2f}x; "
      f"{tokens / checks:.2f} tokens a check; translations {results['plain_hash']} / {results['drafted_hash']}")
