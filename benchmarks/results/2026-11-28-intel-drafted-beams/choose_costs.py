"""Beam search's bookkeeping for one sentence, hot: `BeamSearch.choose` (a step: continuations, running beams,
finished set, stopping rule), its running half `continue_best`, and `top_continuations` alone, beam 4, at the
vocabularies of `small` (16k) and base (32k), with a torch.profiler table of `choose`'s operations."""

import sys

import torch

sys.path.insert(0, "/work/main/benchmarks/results/2026-11-27-intel-session-reuse-mkl-packing")
from probes import best_us  # noqa: E402
from zhen.fast_generation import BeamSearch, top_continuations  # noqa: E402

torch.set_num_threads(2)
torch.manual_seed(0)
for vocab in (16384, 32768):
    log_probs = torch.log_softmax(torch.randn(4, vocab), -1)
    search = BeamSearch("cpu", 1, 4, 1.0, False, 2, 0, 2, 64)
    search.choose(log_probs, 5)

    state = dict(search.__dict__)

    def fresh_choose():
        search.__dict__.update(state)
        search.choose(log_probs, 5)

    def fresh_continue():
        search.__dict__.update(state)
        search.continue_best(log_probs, 5)

    print(f"vocab {vocab}: choose {best_us(fresh_choose, 300):.0f} us, continue_best {best_us(fresh_continue, 300):.0f} us, "
          f"top_continuations {best_us(lambda: top_continuations(log_probs, state['running_scores'], 8), 300):.0f} us")
with torch.profiler.profile() as profile:
    for _ in range(100):
        fresh_choose()
print(profile.key_averages().table(sort_by="self_cpu_time_total", row_limit=15))
