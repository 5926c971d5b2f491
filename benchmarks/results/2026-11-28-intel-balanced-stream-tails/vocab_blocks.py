"""Beam search's vocabulary work in one step at tiny width (int8 LM head d_model 256 -> 16k, 64 sentences x 4 beams):
the whole batch at once (product, log-softmax in place, `top_continuations`) against the same in blocks of sentences,
the input's quantization chosen once for the batch; the same results bit for bit?"""
import sys
import torch
sys.path.insert(0, "/work/main/benchmarks/results/2026-11-27-intel-session-reuse-mkl-packing")
from probes import best_us
from zhen import hardware
from zhen.fast_generation import top_continuations
from zhen.quantization import quantize_dynamic

hardware.keep_freed_memory()
torch.manual_seed(0)
q = quantize_dynamic(torch.nn.Sequential(torch.nn.Linear(256, 16384)))[0]
packed = q._packed_params._packed_params
op = torch.ops.quantized.linear_with_input_q_dq_qweight_dq_output_fp32

def whole(x, running):
    logits = torch.ops.quantized.linear_dynamic(x, packed, reduce_range=True)
    return top_continuations(torch.log_softmax(logits, -1, out=logits), running, 8)

def blocks(x, running, sentences):
    scale, zero = torch._choose_qparams_per_tensor(x, True)
    beams = running.shape[1]
    parts = []
    for s in range(0, len(running), sentences):
        logits = op(x[s * beams:(s + sentences) * beams], scale, zero, packed)
        parts.append(top_continuations(torch.log_softmax(logits, -1, out=logits), running[s:s + sentences], 8))
    return tuple(torch.cat(p) for p in zip(*parts))

with torch.inference_mode():
    for batch in (64, 32):
        x, running = torch.randn(batch * 4, 256) * 3, torch.randn(batch, 4) * 5
        ref = whole(x, running)
        print(batch, "sentences: identical", [all(torch.equal(a, b) for a, b in zip(ref, blocks(x, running, s))) for s in (8, 16, 32)])
        for threads in (1, 2):
            torch.set_num_threads(threads)
            print(f"  {threads} thread(s): whole {best_us(lambda: whole(x, running), 20):.0f} µs;",
                  *[f"blocks of {s} sentences {best_us(lambda: blocks(x, running, s), 20):.0f}" for s in (8, 16, 32)])
