"""A beam step's bookkeeping (`BeamSearch.choose`) for one sentence, beam 4, hot: as it is, and as the one TorchScript
function the Zen 5 session prototyped (`2026-11-27-zen5-real-text-int8-floor/scripted_beam.py`, imported, compiled
on import) on the same state, its results asserted equal. Not kept: 70-80 us a step."""

import sys

import torch

sys.path.insert(0, "/work/main/benchmarks/results/2026-11-27-intel-session-reuse-mkl-packing")
sys.path.insert(0, "/work/main/benchmarks/results/2026-11-27-zen5-real-text-int8-floor")
from probes import best_us  # noqa: E402
from scripted_beam import choose_fn  # noqa: E402
from zhen.fast_generation import BeamSearch  # noqa: E402

torch.set_num_threads(2)
torch.manual_seed(0)
for vocab in (16384, 32768):
    log_probs = torch.log_softmax(torch.randn(4, vocab), -1)
    search = BeamSearch("cpu", 1, 4, 1.0, False, 2, 0, 2, 64)
    search.choose(log_probs, 5)
    state = dict(search.__dict__)

    def eager():
        search.__dict__.update(state)
        return search.choose(log_probs, 5)

    names = ("running", "running_scores", "finished_sequences", "finished_scores", "finished_lengths", "is_finished",
             "can_improve", "row_offset", "is_top_k")  # fmt: skip
    arguments = (log_probs, *(state[name] for name in names), 5, 64, 4, 2, 1.0, False, False)
    scripted = choose_fn(*arguments)
    assert torch.equal(eager(), scripted[2]) and torch.equal(search.running, scripted[0])
    assert torch.equal(search.finished_scores, scripted[4])
    print(f"{vocab} eager choose {best_us(eager, 300):.0f} us, scripted {best_us(lambda: choose_fn(*arguments), 300):.0f} us")
