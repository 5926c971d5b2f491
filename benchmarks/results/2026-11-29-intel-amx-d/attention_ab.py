"""The packed attention function alone, forward and backward, at a base training batch's shape (bench_train's
batches; 8 heads of 64, q, k, v as views of one (tokens, 3 * 512) projection as zhen's attention makes them), in
turns (each first in every other round) between the working tree's version (`now`) and a commit's, for the
encoder's self-attention, the decoder's causal self-attention and cross-attention.
Usage: attention_ab.py [ROUNDS] [COMMIT] [KERNEL] [DTYPE]  (defaults: 20 HEAD matmul bf16)"""

import os
import statistics
import sys
import time
import types

import torch


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from bench_train import make_batches  # noqa: E402
from common import module_at  # noqa: E402

from zhen import packing  # noqa: E402


torch.set_num_threads(2)
rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 20
commit = sys.argv[2] if len(sys.argv) > 2 else "HEAD"
kernel = sys.argv[3] if len(sys.argv) > 3 else "matmul"
dtype = getattr(torch, sys.argv[4] if len(sys.argv) > 4 else "bfloat16")
then = module_at(commit, "zhen/packing.py", "packing_then")
versions = {"now": packing.packed_sdpa_attention, commit: then.packed_sdpa_attention}
layout = packing.pack(make_batches("base", 4096, 1)[0], 2, 0)["packed_layout"]
layout.attention_kernel = kernel
kinds = {
    "encoder self": types.SimpleNamespace(is_causal=False, is_cross_attention=False, training=True),
    "decoder self": types.SimpleNamespace(is_causal=True, is_cross_attention=False, training=True),
    "cross": types.SimpleNamespace(is_causal=False, is_cross_attention=True, training=True),
}


projected = {tokens: torch.randn(1, tokens, 3, 8, 64, dtype=dtype).requires_grad_()
             for tokens in (layout.source_tokens, layout.target_tokens)}  # fmt: skip
grad = {tokens: torch.randn(1, tokens, 8, 64, dtype=dtype) for tokens in projected}


def step(function, module):
    query_side, key_side = layout.sides(module)
    q = projected[query_side.tokens].permute(2, 0, 3, 1, 4)[0]  # as ZhenAttention.split_heads
    _, k, v = projected[key_side.tokens].permute(2, 0, 3, 1, 4)
    out, _ = function(module, q, k, v, None, 0.125, packed_layout=layout)
    out.backward(grad[query_side.tokens])
    for leaf in projected.values():
        leaf.grad = None


times = {(name, kind): [] for name in versions for kind in kinds}
for round_ in range(rounds + 1):
    for kind, module in kinds.items():
        for name, function in list(versions.items())[:: 1 if round_ % 2 else -1]:  # each first in every other round
            start = time.perf_counter()
            step(function, module)
            if round_:
                times[name, kind].append(time.perf_counter() - start)
print(f"{kernel} kernel, {dtype}, {layout.source_tokens} source / {layout.target_tokens} target tokens, medians of "
      f"{rounds} (forward + backward)")
for kind in kinds:
    now, then = (statistics.median(times[name, kind]) * 1e3 for name in versions)
    print(f"{kind:14s} now {now:7.2f} ms   {commit} {then:7.2f} ms   {then / now:.2f}x")
