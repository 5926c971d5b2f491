"""CPU dropout's parts at a base training batch's residual shape ((1, 4000, 512) bf16), timed in turns: the random
draws (int64 `random_`, 4 or 8 masks per draw), the mask (`>=` on int16 or uint8 bits), and applying it (today's
widen, `mul_`, `mul_(scale)`; `where` then `mul_(scale)`). Usage: dropout_variants.py [ROUNDS]"""

import os
import sys

import torch


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from common import medians_in_turns  # noqa: E402


torch.set_num_threads(2)
rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 30
x = torch.randn(1, 4000, 512, dtype=torch.bfloat16)
n = x.numel()
bits16 = torch.empty((n + 3) // 4, dtype=torch.int64).random_().bitwise_and_(0x7FFF_7FFF_7FFF_7FFF).view(torch.int16)
bits8 = torch.empty((n + 7) // 8, dtype=torch.int64).random_(-(2**63), None).view(torch.uint8)
keep = (bits16[:n] >= 3277).view(x.shape)
scale = 1 / 0.9
parts = {
    "random_ int64, 4 masks a draw": lambda: torch.empty((n + 3) // 4, dtype=torch.int64).random_(),
    "random_ int64 full range, 8 masks a draw": lambda: torch.empty((n + 7) // 8, dtype=torch.int64).random_(
        -(2**63), None
    ),
    "bitwise_and_ 15 bits": lambda: bits16.clone().bitwise_and_(0x7FFF),
    "ge int16": lambda: bits16[:n] >= 3277,
    "ge uint8": lambda: bits8[:n] >= 26,
    "apply: widen, mul_, mul_": lambda: keep.view(torch.uint8).to(x.dtype).mul_(x).mul_(scale),
    "apply: where, mul_": lambda: torch.where(keep, x, 0).mul_(scale),
    "apply: masked_fill, mul_ (drop mask)": lambda: x.masked_fill(keep, 0).mul_(scale),
}
print(f"{n} elements, medians of {rounds}")
for name, seconds in medians_in_turns(parts, rounds).items():
    print(f"{name:42s} {seconds * 1e3:7.3f} ms")
high = bits8.view(-1, 8)[:, 7]
print(f"full-range draws: top byte mean {high.float().mean():.1f} (127.5 for uniform), max {int(high.max())}")
