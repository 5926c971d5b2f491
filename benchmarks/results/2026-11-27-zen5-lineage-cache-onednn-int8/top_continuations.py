"""Beam search's top 8 continuations of 64 sentences x 4 beams over 16,000 tokens, one thread: before, the beams'
scores added to all 256 x 16,000 log-probabilities and `topk` over the sums (from chunk maxima); now
`top_continuations` (chunk maxima plus each beam's score). `python top_continuations.py`"""
import time

import torch

from zhen.fast_generation import top_continuations, topk

torch.set_num_threads(1)
batch, beams, vocab, k = 64, 4, 16000, 8
log_probs = torch.log_softmax(torch.randn(batch * beams, vocab), -1)
scores = torch.randn(batch, beams)
work = log_probs.clone()


def before():
    work.copy_(log_probs)  # (the decoder adds in place, into the logits)
    sums = work.view(batch, beams, vocab).add_(scores[:, :, None]).view(batch, beams * vocab)
    values, indices = topk(sums, k)
    return values, indices // vocab, indices % vocab


def now():
    work.copy_(log_probs)
    return top_continuations(work, scores, k)


def best_ms(function, repeats=200):
    function()
    start = time.perf_counter()
    for _ in range(repeats):
        function()
    return (time.perf_counter() - start) / repeats * 1e3


copy = best_ms(lambda: work.copy_(log_probs))
print(f"before {best_ms(before) - copy:.3f} ms, now {best_ms(now) - copy:.3f} ms (the copy, {copy:.3f} ms, taken off)")
assert all(torch.equal(a, b) for a, b in zip(before(), now()))
