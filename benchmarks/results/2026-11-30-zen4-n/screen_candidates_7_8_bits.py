"""Candidate blocks per row of the screen's few-row path with 7-bit and 8-bit hidden values, on the hidden states of
real greedy steps (`zhen.translate`, 4 texts a call, float32 session): the width of the bound each leaves.

    ZHEN_HARDWARE=cpu_bf16=emulated python screen_candidates_7_8_bits.py MODEL
"""
import gzip
import json
import sys

import torch

import zhen
import zhen.screened_argmax as sa
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast

torch.set_num_threads(2)
model = ZhenForConditionalGeneration.from_pretrained(sys.argv[1]).eval()
tokenizer = ZhenTokenizerFast.from_pretrained(sys.argv[1])
with gzip.open("/work/shared/data/tatoeba/valid.jsonl.gz", "rt") as lines:
    rows = [json.loads(line) for line, _ in zip(lines, range(64))]
captured = []
original = sa.ScreenedArgmax.many_rows


def capture(self, hidden, banned):
    captured.append((self, hidden.clone(), banned))
    return original(self, hidden, banned)


sa.ScreenedArgmax.many_rows = capture
for src, tgt in (("en", "zh"), ("zh", "en")):
    texts = [row[src] for row in rows]
    for i in range(0, len(texts), 4):
        zhen.translate(texts[i : i + 4], model, tokenizer, src_lang=src, tgt_lang=tgt, num_beams=1)
sa.ScreenedArgmax.many_rows = original
few = [(s, h, b) for s, h, b in captured if len(h) <= sa.FEW_ROWS]
print(f"{sys.argv[1]}: {len(few)} screens of 2-{sa.FEW_ROWS} rows ({sum(len(h) for _, h, _ in few)} rows)")
for levels in (sa.FBGEMM_LEVELS, 127):
    blocks = tokens = 0
    for screen, hidden, _ in few:
        step = hidden.abs().amax(-1, keepdim=True) / levels
        quantized = torch.round(hidden / step)
        estimate = torch._int_mm(quantized.to(torch.int8), screen.int8_weight).float()
        unit = step * screen.scale
        l1 = hidden.abs().sum(-1, keepdim=True)
        weight_error = torch.minimum(l1 * (screen.scale / 2), hidden.norm(dim=-1, keepdim=True) * screen.max_error_l2)
        hidden_error = torch.minimum(step * screen.half_max_l1,
                                     (hidden - quantized * step).norm(dim=-1, keepdim=True) * screen.max_l2)
        margin = (2 * sa.SLACK * (weight_error + hidden_error) + 1e-5 * l1 * screen.max_weight) / unit
        if screen.bias is not None:
            estimate = estimate + screen.bias / unit
        per_block = sa._blocks(estimate)
        floor = per_block.amax(-1).amax(-1, keepdim=True) - margin
        blocks += int((per_block.amax(-1) >= floor).sum())
        tokens += int((estimate >= floor).sum())
    n = sum(len(h) for _, h, _ in few)
    print(f"  {levels:3d} levels ({7 if levels < 127 else 8} bits): candidate blocks per row {blocks / n:.2f}, "
          f"candidate tokens per row {tokens / n:.2f}")

# The few-row screens themselves, timed on the captured hidden states: a fresh screen of the same LM head per variant,
# its FBGEMM weight packed beforehand (PACK_AFTER passed), variants alternated over 5 rounds.
import time  # noqa: E402

from zhen import hardware  # noqa: E402

head = few[0][0]
linear = torch.nn.Linear(head.weight.shape[1], head.weight.shape[0], bias=head.bias is not None)
linear.weight.data, linear.bias = head.weight, None if head.bias is None else torch.nn.Parameter(head.bias)
sa.PACK_AFTER = 0
timings = {}
with torch.inference_mode():
    for _ in range(5):
        for full_range in ("off", "on"):
            with hardware.forced(int8_full_range=full_range):
                screen = sa.ScreenedArgmax(linear)
                screen.fbgemm_weight  # noqa: B018
                start = time.perf_counter()
                tokens = [screen.many_rows(hidden, banned) for _, hidden, banned in few]
                seconds = time.perf_counter() - start
            timings.setdefault(full_range, []).append(seconds / len(few) * 1e6)
            path = "FBGEMM" if screen.fbgemm_weight is not None else "_int_mm"
            timings.setdefault(full_range + " path", path)
            timings.setdefault(full_range + " tokens", [None if t is None else t.tolist() for t in tokens])
assert timings["off tokens"] == timings["on tokens"]
for full_range, bits in (("off", 7), ("on", 8)):
    runs = sorted(timings[full_range])
    print(f"  {bits} bits ({timings[full_range + ' path']}): us a screen {[round(t) for t in timings[full_range]]}, "
          f"median {runs[2]:.0f}")
print(f"  same tokens; median ratio {sorted(timings['off'])[2] / sorted(timings['on'])[2]:.2f}x")
