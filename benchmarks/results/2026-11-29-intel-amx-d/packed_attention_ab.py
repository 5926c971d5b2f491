"""Base training steps of zhen's CPU path (FastTraining, as bench_train's zhen-prenorm-<precision>) taking turns, step
by step in one process, between two versions of the packed attention function (`zhen.packing.packed_sdpa_attention`):
`now` (the working tree's) and a commit's. Both read the working tree's layout (a commit's function iterates its
groups). Each version goes first in every other round. Reports each version's median step over the rounds and the
median of the paired ratios (same batch, taken in turn).
Usage: packed_attention_ab.py [ROUNDS] [COMMIT] [PRECISION]  (defaults: 6 HEAD bf16)"""

import os
import statistics
import sys
import warnings

import torch


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from bench_train import make_batches  # noqa: E402
from common import module_at, steps_in_turns, zhen_model  # noqa: E402
from transformers.modeling_utils import AttentionInterface  # noqa: E402

from zhen import packing  # noqa: E402
from zhen.fast_training import FastTraining  # noqa: E402


warnings.simplefilter("ignore")
torch.set_num_threads(2)
rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 6
commit = sys.argv[2] if len(sys.argv) > 2 else "HEAD"
precision = sys.argv[3] if len(sys.argv) > 3 else "bf16"


then = module_at(commit, "zhen/packing.py", "packing_then")
versions = {"now": packing.packed_sdpa_attention, commit: then.packed_sdpa_attention}
torch.manual_seed(0)
model = zhen_model("base", variant="prenorm")
fast = FastTraining(model, mixed_precision=precision)
model.train()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
batches = make_batches("base", 4096, 4)


def step(batch):
    with torch.autocast("cpu", torch.bfloat16, enabled=precision == "bf16"):
        loss = fast.loss(model, {key: batch[key] for key in ("input_ids", "attention_mask", "labels")})
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return loss.item()


times = steps_in_turns(versions, lambda f: AttentionInterface.register(packing.PACKED_ATTENTION, f), step, batches,
                       rounds)  # fmt: skip
ratios = [then / now for then, now in zip(times[commit], times["now"])]
for name, seconds in times.items():
    print(f"{name:>8}: median step {statistics.median(seconds) * 1e3:7.1f} ms, best {min(seconds) * 1e3:7.1f} ms")
print(f"{commit} / now, median of {len(ratios)} paired steps: {statistics.median(ratios):.3f} "
      f"(quartiles {statistics.quantiles(ratios, n=4)[0]:.3f}-{statistics.quantiles(ratios, n=4)[2]:.3f})")
