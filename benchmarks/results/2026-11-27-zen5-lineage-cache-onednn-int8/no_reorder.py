"""What beam search's cache reorder cost before `LineageCache` (run against commit ea8192c, whose
`StaticDecodingCache.reorder` copies the rows whose history changes): one thread, tiny, a batch of 64 × 4 beams,
best of five, with the reorder and with it made a no-op (wrong output, the time without it).
`PYTHONPATH=OLD_TREE python no_reorder.py int8 4`"""
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "2026-11-27-zen5-scripted-layer-steps"))
from tiny_models import batches, tiny_model, translate  # noqa: E402

from zhen import fast_generation  # noqa: E402
from zhen.fast_generation import FastDecoder  # noqa: E402

torch.set_num_threads(1)
mode, beams = sys.argv[1], int(sys.argv[2])
model, batch = tiny_model(mode), batches(fixed=True)[0]


def best_of_five(label):
    with torch.inference_mode(), FastDecoder(model) as decoder:
        translate(decoder, batch, beams)
        best = float("inf")
        for _ in range(5):
            start = time.perf_counter()
            translate(decoder, batch, beams)
            best = min(best, time.perf_counter() - start)
    print(label, f"{best * 1000:.1f} ms", flush=True)


best_of_five("with the reorder")
reorder = fast_generation.StaticDecodingCache.reorder
fast_generation.StaticDecodingCache.reorder = lambda self, rows, length: None
best_of_five("without")
fast_generation.StaticDecodingCache.reorder = reorder
best_of_five("with the reorder")
