"""Base bf16 training steps of zhen's CPU path (FastTraining, as bench_train's zhen-prenorm-bf16) taking turns, step
by step in one process, between variants of the fused loss: its chunk of LM-head rows, and its code (`now`: the
working tree's; `180e82f`: that commit's, float32 logits per chunk). Reports the whole step and the loss's part
(LinearCrossEntropy's forward, which also forms its gradients), after warm-up steps over the same batches so that the
heap has reached its size. Usage: chunk_ab.py [ROUNDS] [CODE:CHUNK...]  (default: 180e82f:512 now:512 now:2048)"""

import importlib.util
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from common import zhen_model  # noqa: E402
from bench_train import make_batches  # noqa: E402

from zhen import fast_training  # noqa: E402
from zhen.fast_training import FastTraining  # noqa: E402


warnings.simplefilter("ignore")
torch.set_num_threads(2)
rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 4
chunks = sys.argv[2:] or ["180e82f:512", "now:512", "now:2048"]
loss_part = {"s": 0.0}


def module_at(commit: str):
    source = subprocess.run(["git", "show", f"{commit}:zhen/fast_training.py"], capture_output=True, text=True,
                            check=True, cwd=os.path.dirname(os.path.abspath(__file__))).stdout  # fmt: skip
    source = source.replace("from . import", "from zhen import").replace("from .", "from zhen.")
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as file:
        file.write(source)
    spec = importlib.util.spec_from_file_location(f"fast_training_{commit}", file.name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def timed(function):
    class Timed(function):
        @staticmethod
        def forward(ctx, *args):
            start = time.perf_counter()
            out = function.forward(ctx, *args)
            loss_part["s"] += time.perf_counter() - start
            return out

    return Timed


codes = {code: timed(fast_training.LinearCrossEntropy if code == "now" else module_at(code).LinearCrossEntropy)
         for code in {variant.split(":")[0] for variant in chunks}}  # fmt: skip


def use(variant: str):
    code, chunk = variant.split(":")
    fast_training.LinearCrossEntropy, fast.loss_chunk_size = codes[code], int(chunk)

torch.manual_seed(0)
model = zhen_model("base", variant="prenorm")
fast = FastTraining(model, mixed_precision="bf16")
model.train()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
batches = make_batches("base", 4096, 4)


def step(batch):
    with torch.autocast("cpu", torch.bfloat16):
        loss = fast.loss(model, {key: batch[key] for key in ("input_ids", "attention_mask", "labels")})
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)


for chunk in chunks:  # warm-up: every batch with every variant
    use(chunk)
    for batch in batches:
        step(batch)
seconds = {c: [] for c in chunks}
loss_seconds = {c: [] for c in chunks}
faults = {c: 0 for c in chunks}
for r in range(rounds):
    for batch in batches:
        for chunk in chunks[r % len(chunks) :] + chunks[: r % len(chunks)]:
            use(chunk)
            loss_part["s"] = 0.0
            before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            start = time.perf_counter()
            step(batch)
            seconds[chunk].append(time.perf_counter() - start)
            loss_seconds[chunk].append(loss_part["s"])
            faults[chunk] += resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
tokens = sum(int((b["labels"] != -100).sum()) for b in batches) * rounds
print(f"base bf16, {len(batches)} batches x {rounds} rounds, {tokens // (len(batches) * rounds)} target tokens a batch")
for chunk in chunks:
    total = sum(seconds[chunk])
    print(f"{chunk:12s}: {tokens / total:6.0f} tgt tok/s  step median {statistics.median(seconds[chunk]):.2f} s  "
          f"loss part median {statistics.median(loss_seconds[chunk]):.2f} s ({sum(loss_seconds[chunk]) / total:.0%})  "
          f"page faults a step {faults[chunk] / len(seconds[chunk]):.0f}  maxrss {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10} MiB")  # fmt: skip
