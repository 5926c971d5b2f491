"""What this folder's scripts share (run from the repository root, so that `zhen` is the checkout's): the median time
of a call, and a checkpoint loaded as the one-text measurements load it."""

import statistics
import sys
import time
import warnings

import torch


sys.path.insert(0, ".")
torch.set_num_threads(2)


def median_time(call, repeat: int, warmup: int = 2) -> float:
    """The median seconds of `repeat` calls of `call`, after `warmup` calls untimed."""
    for _ in range(warmup):
        call()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def load(path: str, compile_at_once: bool = True):
    """`(model, tokenizer)` of the checkpoint at `path`, quietly, in eval mode; with `compile_at_once`, the layers'
    programs compiled from the model's first call (`SCRIPT_AFTER_SECONDS = 0`, as `benchmarks/common.py` has it)."""
    warnings.simplefilter("ignore")
    from transformers.utils import logging

    logging.set_verbosity_error()
    import zhen.fast_generation
    from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast

    if compile_at_once:
        zhen.fast_generation.SCRIPT_AFTER_SECONDS = 0
    return ZhenForConditionalGeneration.from_pretrained(path).eval(), ZhenTokenizerFast.from_pretrained(path)
