"""At base, one sentence, beam 4, hot: a float32 beam step (4 rows: layers, logits, log-softmax), the draft's, and a
check of n positions in one pass with their logits and log-softmax. Usage: beam_pass_costs.py CHECKPOINT"""

import sys

import torch

sys.path.insert(0, "/work/main/benchmarks/results/2026-11-27-intel-session-reuse-mkl-packing")
from probes import best_us, checkpoint_and_pairs  # noqa: E402
from zhen.fast_generation import FastDecoder  # noqa: E402

model, tokenizer, rows = checkpoint_and_pairs(sys.argv[1])
ids = tokenizer(rows[0]["en"], return_tensors="pt").input_ids
mask = torch.ones_like(ids)
four = torch.full((4,), 7)


def step_costs(steps, name):
    for p in range(12):
        steps.step(four, p)
    hidden = steps.step(four, 12)
    layers = best_us(lambda: steps.step(four, 12), 30)
    head = best_us(lambda: torch.log_softmax(steps.logits(hidden), -1), 30)
    print(f"{name} beam step (4 rows): layers {layers:.0f} us, logits + log-softmax {head:.0f} us")


with torch.inference_mode(), FastDecoder(model, drafts=True) as decoder:
    beams = decoder.decoder_steps(ids, mask, 4, 64)
    step_costs(beams, "float32")
    greedy = decoder.decoder_steps(ids, mask, 1, 64, drafted=True)
    enc = torch.zeros(1, 1, model.config.d_model)
    step_costs(decoder.draft_steps(beams, enc, mask, 64, 4), "int8 draft")
    for p in range(12):
        greedy.step(torch.tensor([7]), p)
    for n in (4, 8, 12, 16, 20, 24):
        tokens = torch.full((n,), 7)
        hidden = greedy.steps(tokens, 12)
        layers = best_us(lambda: greedy.steps(tokens, 12), 20)
        head = best_us(lambda: torch.log_softmax(greedy.logits(hidden), -1), 20)
        print(f"check of {n} positions: layers {layers:.0f} us, logits + log-softmax {head:.0f} us")
