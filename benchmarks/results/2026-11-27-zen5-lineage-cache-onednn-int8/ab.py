"""In-process A/B of a tree's fast decoder on the tiny probes' batches (`../2026-11-27-zen5-scripted-layer-steps/
tiny_models.py`): best of three passes over 8 batches of 64, 32 new tokens. Alternate trees with PYTHONPATH:
`PYTHONPATH=TREE python ab.py int8|fp32 BEAMS THREADS` (THREADS 2: two decoding streams, each one thread)."""
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "2026-11-27-zen5-scripted-layer-steps"))
from tiny_models import batches, tiny_model, translate  # noqa: E402

from zhen.fast_generation import FastDecoder  # noqa: E402

mode, beams, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
torch.manual_seed(0)
model, work = tiny_model(mode), batches(fixed=False)
with torch.inference_mode(), FastDecoder(model) as decoder:
    if threads == 1:
        torch.set_num_threads(1)
        run = lambda: [translate(decoder, batch, beams) for batch in work]  # noqa: E731
    else:
        run = lambda: list(decoder.map(lambda batch: translate(decoder, batch, beams), work, streams=2))  # noqa: E731
    run()
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        out = run()
        best = min(best, time.perf_counter() - start)
print(f"{best:.3f} s  {sum(o.numel() for o in out) / best:.0f} tok/s")
