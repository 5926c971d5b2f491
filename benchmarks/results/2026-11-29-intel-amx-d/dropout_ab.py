"""CPU dropout (`zhen.fast_training.CpuDropout`), forward and backward at a base batch's residual shape ((1, 4000, 512)
bf16), the working tree's against a commit's, taking turns. Usage: dropout_ab.py [ROUNDS] [COMMIT]"""

import os
import statistics
import sys
import time

import torch


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from common import module_at  # noqa: E402

from zhen import fast_training  # noqa: E402


torch.set_num_threads(2)
rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 30
commit = sys.argv[2] if len(sys.argv) > 2 else "HEAD"
then = module_at(commit, "zhen/fast_training.py", "fast_training_then")
versions = {"now": fast_training.CpuDropout(0.1).train(), commit: then.CpuDropout(0.1).train()}
x = torch.randn(1, 4000, 512, dtype=torch.bfloat16, requires_grad=True)
grad = torch.randn(1, 4000, 512, dtype=torch.bfloat16)
times = {name: [] for name in versions}
for round_ in range(rounds + 1):
    for name, dropout in list(versions.items())[:: 1 if round_ % 2 else -1]:
        start = time.perf_counter()
        dropout(x).backward(grad)
        x.grad = None
        if round_:
            times[name].append(time.perf_counter() - start)
now, then = (statistics.median(times[name]) * 1e3 for name in versions)
print(f"dropout forward + backward, (1, 4000, 512) bf16, medians of {rounds}: now {now:.3f} ms, "
      f"{commit} {then:.3f} ms, {then / now:.2f}x")
