"""At base, one sentence, hot: a float32 step and its next token, a check of k drafted tokens (`DecoderSteps.steps`
and the screen of its rows), and a draft step and its next token. Usage: pass_costs.py CHECKPOINT"""

import sys

import torch

sys.path.insert(0, "/work/main/benchmarks/results/2026-11-27-intel-session-reuse-mkl-packing")
from probes import best_us, checkpoint_and_pairs  # noqa: E402
from zhen.fast_generation import FastDecoder  # noqa: E402

model, tokenizer, rows = checkpoint_and_pairs(sys.argv[1])
ids = tokenizer(rows[0]["en"], return_tensors="pt").input_ids
mask = torch.ones_like(ids)
with torch.inference_mode(), FastDecoder(model, drafts=True) as decoder:
    steps = decoder.decoder_steps(ids, mask, 1, 64, drafted=True)
    draft = steps.draft
    for p in range(12):  # a history of 12 positions
        steps.step(torch.tensor([7]), p)
        draft.step(torch.tensor([7]), p)
    for _ in range(300):  # past PACK_AFTER: few-row screens use FBGEMM's packed weight
        steps.next_tokens(torch.randn(3, model.config.d_model))
    hidden = steps.step(torch.tensor([7]), 12)
    print(f"float32 step {best_us(lambda: steps.step(torch.tensor([7]), 12), 50):.0f} us, "
          f"its next token {best_us(lambda: steps.next_tokens(hidden), 50):.0f} us")
    for k in (2, 3, 4, 5, 6, 8):
        tokens = torch.full((k,), 7)
        many = steps.steps(tokens, 12)
        print(f"check of {k} positions: steps {best_us(lambda: steps.steps(tokens, 12), 30):.0f} us, "
              f"next tokens {best_us(lambda: steps.next_tokens(many), 30):.0f} us")
    dh = draft.step(torch.tensor([7]), 12)
    print(f"draft step {best_us(lambda: draft.step(torch.tensor([7]), 12), 50):.0f} us, "
          f"its next token {best_us(lambda: draft.next_tokens(dh), 50):.0f} us")
