"""In-process A/B of the fused loss (LinearCrossEntropy, forward and backward) under bf16 autocast at base shape
(d_model 512, vocab 32k): the code of commit 180e82f (float32 logits per chunk) against the working tree's, taking
turns. Usage: loss_ab.py [TOKENS] [ROUNDS] [CHUNK...]"""

import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time

import torch

from zhen import fast_training


def old_module():
    source = subprocess.run(["git", "show", "180e82f:zhen/fast_training.py"], capture_output=True, text=True,
                            check=True, cwd="/work/main").stdout.replace("from .", "from zhen.").replace("from zhen. import", "from zhen import")  # fmt: skip
    path = tempfile.NamedTemporaryFile("w", suffix=".py", delete=False)
    path.write(source)
    path.close()
    spec = importlib.util.spec_from_file_location("fast_training_180e82f", path.name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


torch.set_num_threads(2)
tokens = int(sys.argv[1]) if len(sys.argv) > 1 else 2500
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 7
chunks = [int(c) for c in sys.argv[3:]] or [512]
torch.manual_seed(0)
hidden = torch.randn(tokens, 512, requires_grad=True)
weight = (torch.randn(32000, 512) * 0.05).requires_grad_()
labels = torch.randint(0, 32000, (tokens,))
systems = {f"{name}-chunk{c}": (module.LinearCrossEntropy, c) for name, module in
           (("180e82f", old_module()), ("now", fast_training)) for c in chunks}  # fmt: skip


def step(function, chunk):
    with torch.autocast("cpu", torch.bfloat16):
        loss = function.apply(hidden, weight, labels, 0.1, chunk)
    loss.backward()
    grads = hidden.grad, weight.grad
    hidden.grad = weight.grad = None
    return loss.item(), grads


results = {name: step(*system) for name, system in systems.items()}
times = {name: [] for name in systems}
for _ in range(rounds):
    for name, system in systems.items():
        start = time.perf_counter()
        step(*system)
        times[name].append(time.perf_counter() - start)
reference_loss, (reference_dh, reference_dw) = results[next(iter(systems))]
flops = 3 * 2 * tokens * 512 * 32000
print(f"tokens {tokens}, rounds {rounds}, torch {torch.__version__}; products {flops / 1e9:.0f} GFLOP a step")
for name, t in times.items():
    loss, (dh, dw) = results[name]
    print(f"{name:18s} best {min(t) * 1e3:6.0f} ms  median {statistics.median(t) * 1e3:6.0f} ms  "
          f"{flops / min(t) / 1e9:5.0f} GFLOP/s  loss {loss:.4f} (vs first {loss - reference_loss:+.4f})  "
          f"max |d grad| hidden {(dh - reference_dh).abs().max():.2e} weight {(dw - reference_dw).abs().max():.2e}")  # fmt: skip
