"""(Needs float32_draft_products.patch, not kept.) zhen.translate one text a call, drafted, greedy and beam 4, with the draft's 512 x 512 products (self-attention's
output, cross-attention's query and output) int8 (as before) or float32 (shared with the model): one variant a
process; run them in turn. Usage: float32_draft_products.py CHECKPOINT int8|float32 [TEXTS] [ROUNDS]"""

import sys
import time

sys.path.insert(0, "/work/main/benchmarks/results/2026-11-27-intel-session-reuse-mkl-packing")
import zhen  # noqa: E402
from probes import checkpoint_and_pairs, each_way  # noqa: E402
from zhen import draft_decoding  # noqa: E402

draft_decoding.DRAFT_AFTER, draft_decoding.MIN_DECODER_WEIGHTS = 0, 0
if sys.argv[2] == "float32":
    draft_decoding.FLOAT32_PRODUCTS = ("kv_proj", "out_proj", "q_proj")
model, tokenizer, rows = checkpoint_and_pairs(sys.argv[1])
count, rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 16, int(sys.argv[4]) if len(sys.argv) > 4 else 2
for beams in (1, 4):
    for direction, texts, options in each_way(model, tokenizer, rows, count, num_beams=beams):
        best = float("inf")
        for _ in range(rounds):
            start = time.perf_counter()
            out = [zhen.translate(text, **options) for text in texts]
            best = min(best, (time.perf_counter() - start) * 1e3 / count)
        print(f"{sys.argv[2]} beams {beams} {direction}: {best:.1f} ms a call, hash {hash(tuple(out)) % 10**8}")
