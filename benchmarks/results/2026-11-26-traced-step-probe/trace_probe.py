"""Probe (not a benchmark of the package): zhen's int8 decoder step traced with torch.jit.trace and run by the
TorchScript interpreter, against the default session. Run from the repository root:

    python benchmarks/results/2026-11-26-traced-step-probe/trace_probe.py default,traced
"""

import os
import sys
import time
import warnings

import torch


sys.path.insert(0, os.path.join(os.getcwd(), "benchmarks"))
warnings.simplefilter("ignore")
from common import SIZES, ZH, source_batches, zhen_model  # noqa: E402

from zhen import fast_generation as fg  # noqa: E402
from zhen.quantization import quantize_dynamic  # noqa: E402


SIZE, PRECISION = os.environ.get("SIZE", "base"), os.environ.get("P", "int8")
TRACE_SECONDS = []


class StepModule(torch.nn.Module):
    """The decoder as a submodule, so that the trace holds the int8 packed weights."""

    def __init__(self, steps):
        super().__init__()
        self.decoder, self.steps = steps.decoder, [steps]

    def forward(self, tokens, position_ids, self_bias):
        return self.steps[0].run_layers(tokens, position_ids, self_bias)


def traced_step(self, tokens, position):
    self.tokens.copy_(tokens[:, None])
    self.position_ids.fill_(position)
    self.self_bias[..., position] = 0
    inputs = (self.tokens, self.position_ids, self.self_bias)
    if self.cache.keys[0] is None:
        return self.run_layers(*inputs)
    if getattr(self, "traced", None) is None:
        start = time.perf_counter()
        self.traced = torch.jit.trace(StepModule(self), inputs, check_trace=False)
        TRACE_SECONDS.append(time.perf_counter() - start)
    with torch.jit.optimized_execution(False):
        return self.traced(*inputs)


def keep(self, *args):
    KEEP(self, *args)
    self.traced = None


KEEP = fg.StaticDecoderSteps.keep


def run(model, batches, mode: str, streams: int):
    torch.set_num_threads(2)
    if mode == "traced":
        fg.StaticDecoderSteps.step, fg.StaticDecoderSteps.keep = traced_step, keep
    with torch.inference_mode(), fg.FastDecoder(model, cuda_graphs=mode != "default") as decoder:

        def translate(b):
            return decoder.generate(b["input_ids"], b["attention_mask"], forced_bos_token_id=ZH, max_new_tokens=32,
                                    min_new_tokens=32)  # fmt: skip

        list(decoder.map(translate, batches[:2], streams))
        start = time.perf_counter()
        outputs = list(decoder.map(translate, batches, streams))
        return time.perf_counter() - start, torch.cat([o.flatten() for o in outputs])


def main():
    model = zhen_model(SIZE, "prenorm", "sdpa", 0.0).eval()
    model = quantize_dynamic(model) if PRECISION == "int8" else model
    for p in model.parameters():
        p.requires_grad_(False)
    batches = source_batches(128, 32, SIZES[SIZE]["vocab"])
    reference = None
    for mode in sys.argv[1].split(","):
        for streams in (1, 2):
            seconds, ids = run(model, batches, mode, streams)
            reference = ids if reference is None else reference
            print(f"{SIZE} {PRECISION} {mode} streams={streams}: {128 * 32 / seconds:.0f} tok/s, tracing "
                  f"{sum(TRACE_SECONDS):.2f} s, same ids: {torch.equal(ids, reference)}")  # fmt: skip
            TRACE_SECONDS.clear()


if __name__ == "__main__":
    main()
