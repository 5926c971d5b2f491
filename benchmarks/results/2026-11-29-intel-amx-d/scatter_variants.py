"""The backward of the packed attention's gather and unpad at a base training batch's shape (4,130 target tokens,
8 heads of 64, groups from bench_train's batches), bf16, timed in turns: the `index_add_` autograd runs (as
`scatter_add_`), `index_copy_` into zeros, and `index_select` by the inverse map (with the padding rows zeroed where
the map is not onto). Usage: scatter_variants.py [ROUNDS]"""

import os
import sys

import torch


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from bench_train import make_batches  # noqa: E402
from common import medians_in_turns  # noqa: E402

from zhen.packing import pack  # noqa: E402


torch.set_num_threads(2)
rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 20
batch = make_batches("base", 4096, 1)[0]
layout = pack(batch, 2, 0)["packed_layout"]
side, heads, dim = layout.target, 8, 64
gather, unpad = side.gather(heads), side.unpad(heads)
rows, slots = side.tokens * heads, len(gather)
grad_padded = torch.randn(slots, dim, dtype=torch.bfloat16)
grad_states = torch.randn(rows, dim, dtype=torch.bfloat16)
pad = torch.ones(slots, dtype=torch.bool)
pad[unpad] = False
variants = {
    "gather bwd: zeros + index_add_": lambda: grad_padded.new_zeros(rows, dim).index_add_(0, gather, grad_padded),
    "gather bwd: index_select(unpad)": lambda: grad_padded.index_select(0, unpad),
    "unpad bwd: zeros + index_add_": lambda: grad_states.new_zeros(slots, dim).index_add_(0, unpad, grad_states),
    "unpad bwd: zeros + index_copy_": lambda: grad_states.new_zeros(slots, dim).index_copy_(0, unpad, grad_states),
    "unpad bwd: index_select(gather) + masked_fill_": lambda: grad_states.index_select(0, gather).masked_fill_(
        pad[:, None], 0
    ),
    "forward: index_select(gather)": lambda: grad_states.index_select(0, gather),
}
print(f"{side.tokens} tokens x {heads} heads, {slots} padded rows of {dim}, bf16; medians of {rounds}")
for name, seconds in medians_in_turns(variants, rounds).items():
    print(f"{name:48s} {seconds * 1e3:7.3f} ms")
