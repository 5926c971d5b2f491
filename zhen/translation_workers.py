# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""Translating in worker processes: `zhen-translate --workers N`.

In one process, zhen's CPU decoding streams are threads of one Python interpreter, and each PyTorch call of a
decoding step lets go of the interpreter's lock and takes it back, waiting where another stream holds it. Worker
processes each have an interpreter of their own: each loads the checkpoint, keeps one decoding session
([`FastDecoder`]) for its life and translates the batches of lines it is sent, on its share of the PyTorch threads.
They are started with `spawn`, a fresh interpreter each: a forked copy of a process whose threads have run PyTorch
can hang in GNU OpenMP or MKL (`benchmarks/results/2026-11-27-zen5-decoding-processes.md`). Starting takes seconds
(importing PyTorch, loading the checkpoint), repaid on long inputs.
"""

import multiprocessing
import signal
import types
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

import torch
from transformers.utils import logging

from . import hardware
from .fast_generation import FastDecoder
from .translation import DEFAULT_BATCH_SIZE, load_model_and_tokenizer, translate


logger = logging.get_logger(__name__)

_WORKER = types.SimpleNamespace(error=None)  # in a worker process: its model, tokenizer and session, or the error


class TranslationWorkers:
    """`count` worker processes translating with the checkpoint `model` (and `tokenizer`, by default the model's) on the
    CPU, each with `threads` PyTorch threads (by default its share of this process's). [`translate_lines`] translates
    a list of lines; [`translate_batches`] sends batches of texts and yields their translations in order. Use as a
    context manager: the workers end with the block."""

    def __init__(self, model: str, tokenizer: str | None, count: int, threads: int | None = None, int8: bool = False):
        self.count = count
        threads = threads or max(1, torch.get_num_threads() // count)
        self.pool = ProcessPoolExecutor(
            count, mp_context=multiprocessing.get_context("spawn"), initializer=_start_worker,
            initargs=(str(model), None if tokenizer is None else str(tokenizer), threads, int8,
                      hardware.current().preferred_float32_packing()),
        )  # fmt: skip

    def __enter__(self) -> "TranslationWorkers":
        return self

    def __exit__(self, *exc_info):
        self.pool.shutdown(wait=True, cancel_futures=True)

    def translate_lines(
        self, lines: list[str], first_line: int = 1, batch_size: int = DEFAULT_BATCH_SIZE, **options
    ) -> list[str]:
        """The translations of `lines` (numbered from `first_line` in warnings), in order: batches of `batch_size`,
        longest first, shared out among the workers."""
        indices, batches = batches_longest_first(lines, batch_size)
        line_numbers = [[first_line + i for i in batch] for batch in indices]
        translations = [""] * len(lines)
        for batch, results in zip(indices, self.translate_batches(batches, line_numbers, **options)):
            for i, text in zip(batch, results):
                translations[i] = text
        return translations

    def translate_batches(
        self, batches: list[list[str]], line_numbers: list[list[int]] | None = None, **options
    ) -> Iterator[list[str]]:
        """The translations of each of `batches` (lists of texts), in order: `zhen.translate(batch, **options)` in
        a worker, with `streams=1`. A text truncated to the model's limit is logged with its number in
        `line_numbers` (by default its index)."""
        futures = []
        try:
            for texts, numbers in zip(batches, line_numbers or [None] * len(batches)):
                futures.append(self.pool.submit(_translate, texts, numbers, options))
            for future in futures:
                yield future.result()
        except BrokenProcessPool as error:
            raise RuntimeError(
                "A translation worker process ended unexpectedly (killed, or out of memory); run again with fewer "
                "--workers, a smaller --batch-size, or without --workers."
            ) from error
        finally:
            for future in futures:
                future.cancel()


def batches_longest_first(texts: list[str], batch_size: int) -> tuple[list[list[int]], list[list[str]]]:
    """The indices and texts of `texts` in batches of `batch_size`, longest texts first (by characters), so that a
    batch pads little and the longest batches start first."""
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    indices = [order[start : start + batch_size] for start in range(0, len(order), batch_size)]
    return indices, [[texts[i] for i in batch] for batch in indices]


def _start_worker(model: str, tokenizer: str | None, threads: int, int8: bool, float32_packing: str):
    """Load the model and open the worker's session, its float32 weights packed as the parent's would be (the parent
    measured which library packs faster: every worker translates as the parent would)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C stops the parent, which ends the workers
    torch.set_num_threads(threads)
    logging.disable_progress_bar()
    try:
        _WORKER.model, _WORKER.tokenizer = load_model_and_tokenizer(model, tokenizer, device="cpu", int8=int8)
        with hardware.forced(float32_packing=float32_packing):
            _WORKER.session = FastDecoder(_WORKER.model).__enter__()
    except Exception as error:  # raised with the first batch, in the parent
        _WORKER.error = error


def _translate(texts: list[str], line_numbers: list[int] | None, options: dict) -> list[str]:
    if _WORKER.error is not None:
        raise _WORKER.error
    return translate(
        texts, _WORKER.model, _WORKER.tokenizer, streams=1, batch_size=len(texts) or 1,
        on_truncate=_truncation_warning(line_numbers), **options,
    )  # fmt: skip


def truncation_message(line: int, num_tokens: int, limit: int) -> str:
    """What `zhen-translate` logs for an input line longer than the model reads."""
    return f"line {line}: {num_tokens} tokens, more than the {limit} the model reads; translated its start only."


def _truncation_warning(line_numbers: list[int] | None) -> Callable[[int, int, int], None]:
    def warn(index: int, num_tokens: int, limit: int):
        logger.warning(truncation_message(line_numbers[index] if line_numbers else index, num_tokens, limit))

    return warn


__all__ = ["TranslationWorkers", "batches_longest_first", "truncation_message"]
