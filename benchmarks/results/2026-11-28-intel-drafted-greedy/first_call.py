"""A fresh process's zhen.translate calls (one text each, greedy) with drafting by default: the first, the one that
makes the draft (DRAFT_AFTER + 1) and the next, and the peak memory; 'off' never drafts.
Usage: first_call.py CHECKPOINT on|off"""

import resource
import sys
import time

sys.path.insert(0, "/work/main/benchmarks/results/2026-11-27-intel-session-reuse-mkl-packing")
import zhen  # noqa: E402
from probes import checkpoint_and_pairs  # noqa: E402
from zhen import draft_decoding  # noqa: E402

model, tokenizer, rows = checkpoint_and_pairs(sys.argv[1])
if sys.argv[2] == "off":
    draft_decoding.MIN_DECODER_WEIGHTS = 1 << 62
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
times = []
for call in range(draft_decoding.DRAFT_AFTER + 2):
    start = time.perf_counter()
    zhen.translate(rows[call % 4]["en"], model=model, tokenizer=tokenizer, src_lang="en", tgt_lang="zh", num_beams=1)
    times.append((time.perf_counter() - start) * 1e3)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"drafting {sys.argv[2]}: call 1 {times[0]:.0f} ms, call {len(times) - 1} {times[-2]:.0f} ms, "
      f"call {len(times)} {times[-1]:.0f} ms; peak RSS {before:.0f} MB after loading, {peak:.0f} MB after the calls")
