"""One thread's time for each part of a beam-4 step's vocabulary work at tiny width (int8 oneDNN LM head, 256 rows):
run alone and as two processes at once (PAIR=1 starts a second copy) — what sharing the machine costs each part."""
import os, subprocess, sys
import torch
sys.path.insert(0, "/work/main/benchmarks/results/2026-11-27-intel-session-reuse-mkl-packing")
from probes import best_us
from zhen import hardware
from zhen.fast_generation import top_continuations
from zhen.quantization import quantize_dynamic, pack_for

if os.environ.get("PAIR") == "1":
    other = subprocess.Popen([sys.executable, __file__], env={**os.environ, "PAIR": "0", "QUIET": "1"})
hardware.keep_freed_memory()
torch.set_num_threads(1)
torch.manual_seed(0)
q = pack_for(quantize_dynamic(torch.nn.Sequential(torch.nn.Linear(256, 16384)))[0], "onednn")
packed = q._packed_params._packed_params
x, running = torch.randn(256, 256), torch.randn(64, 4)
with torch.inference_mode():
    logits = torch.ops.quantized.linear_dynamic(x, packed, reduce_range=True)
    parts = {"product": lambda: torch.ops.quantized.linear_dynamic(x, packed, reduce_range=True),
             "log_softmax": lambda: torch.log_softmax(logits, -1, out=logits),
             "top_continuations": lambda: top_continuations(logits, running, 8)}
    out = {k: round(best_us(f, 40, rounds=5)) for k, f in parts.items()}
if not os.environ.get("QUIET"):
    print("pair" if os.environ.get("PAIR") == "1" else "alone", out)
if os.environ.get("PAIR") == "1":
    other.wait()
