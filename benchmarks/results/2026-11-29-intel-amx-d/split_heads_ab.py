"""Base bf16 training steps of zhen's CPU path taking turns (each first in every other round) between the two ways
`ZhenAttention.split_heads` can make the heads' views of a fused projection: `permute` of one view (the parts as an
`unbind`, whose backward stacks the gradients and then copies them into the projection's layout) and `split` (the
working tree's: its backward concatenates them in that layout). Usage: split_heads_ab.py [ROUNDS]"""

import os
import statistics
import sys
import warnings

import torch


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from bench_train import build_step, make_batches  # noqa: E402
from common import steps_in_turns  # noqa: E402

from zhen.modeling_zhen import ZhenAttention  # noqa: E402


def permuted(self, projected, parts):
    return projected.view(*projected.shape[:-1], parts, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)


warnings.simplefilter("ignore")
torch.set_num_threads(2)
rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 6
versions = {"split": ZhenAttention.split_heads, "permute": permuted}
step = build_step("zhen-prenorm-bf16", "base", "fused", None)
batches = make_batches("base", 4096, 4)
times = steps_in_turns(versions, lambda f: setattr(ZhenAttention, "split_heads", f), step, batches, rounds)
ratios = [permute / split for permute, split in zip(times["permute"], times["split"])]
for name, seconds in times.items():
    print(f"{name:>8}: median step {statistics.median(seconds) * 1e3:7.1f} ms")
quartiles = statistics.quantiles(ratios, n=4)
print(f"permute / split, median of {len(ratios)} paired steps: {statistics.median(ratios):.3f} "
      f"(quartiles {quartiles[0]:.3f}-{quartiles[2]:.3f})")
