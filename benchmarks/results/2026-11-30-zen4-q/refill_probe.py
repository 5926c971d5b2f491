# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""Greedy search over more sentences than a batch holds, its rows refilled as sentences finish (continuous batching).

Batches decoded one after the other run their last steps on the few rows whose outputs are longest, where a step
costs what issuing its operations costs, not what its rows do; dropping finished rows copies the caches each time.
[`refilled_greedy_search`] keeps one batch of `rows` rows going instead: each row decodes one sentence at a position
of its own, and once enough rows have finished, the next sentences are encoded and take their place
([`zhen.fast_generation.DecoderSteps.step_rows`]: each row writes its keys and values at its own position, and a
bias hides from it what lies past that position, the history of the sentence it replaced). Only the queue's end
runs on fewer rows. Each sentence gets its own length limit, so its translation does not depend on which others
share its batch (beyond the int8 products' scales, which are a batch's).
"""

import math
import time
from collections import deque

import torch

from . import fast_generation
from .fast_generation import argmax

# Rows finished before new sentences take their places: encoding a few sentences at a time costs more per sentence
# than a batch of them, and each row left finished in the batch costs its share of every step.
REFILL_SHARE = 1 / 8
# The sources' keys and values are copied into shorter tables once every row's source fits this share of their length:
# sentences come longest first, and cross-attention reads every position of a row's table.
SHRINK_SOURCES = 3 / 4


def refilled_greedy_search(session, sources: list[list[int]], max_new_tokens: list[int], rows: int,
                           forced_bos_token_id: int | None = None) -> list[list[int]]:  # fmt: skip
    """Greedy search of every sentence of `sources` (token ids, each ending in `</s>`), with at most
    `max_new_tokens[i]` new tokens for sentence `i`, in one batch of at most `rows` rows refilled as sentences finish,
    in the [`zhen.fast_generation.FastDecoder`] `session`. Returns each sentence's output ids, as a row of
    `session.generate` starts it (the decoder start token, then the generated tokens up to and with `</s>`), in the
    order of `sources`. Longer sentences go first: the batch's source memory is the first sentences' length."""
    if len(sources) != len(max_new_tokens):
        raise ValueError(f"{len(sources)} sources but {len(max_new_tokens)} max_new_tokens")
    if rows < 1:
        raise ValueError(f"rows must be at least 1, got {rows}")
    if not sources:
        return []
    with torch.inference_mode():
        return _Refill(session, sources, max_new_tokens, rows, forced_bos_token_id).run()


class _Refill:
    """The state of one refilled greedy search: per row, its sentence, its position and its length limit."""

    def __init__(self, session, sources, max_new_tokens, rows, forced_bos_token_id):
        self.session, self.model = session, session.model
        config = self.model.generation_config
        eos = config.eos_token_id
        self.eos = eos[0] if isinstance(eos, (list, tuple)) else eos
        self.pad = self.eos if config.pad_token_id is None else config.pad_token_id
        self.start = config.decoder_start_token_id
        self.forced_bos = config.forced_bos_token_id if forced_bos_token_id is None else forced_bos_token_id
        self.forced_eos = config.forced_eos_token_id
        self.sources, self.limits = sources, [1 + n for n in max_new_tokens]  # a row's longest output
        self.queue = deque(sorted(range(len(sources)), key=lambda i: -len(sources[i])))
        self.rows, self.outputs = min(rows, len(sources)), [None] * len(sources)
        self.device = self.model.device

    def run(self) -> list[list[int]]:
        session = self.session
        fast_generation._DECODING.row_sums = session.attends_by_row_sums
        started, script = time.perf_counter(), session.scripts()
        first = [self.queue.popleft() for _ in range(self.rows)]
        input_ids, attention_mask = self.batch(first)
        self.steps = session.decoder_steps(input_ids, attention_mask, 1, max(self.limits), script_layers=script)
        if not self.steps.refill_works():
            raise ValueError("refilled greedy search needs the decoder's layers as one program and a position table")
        self.sentence = first
        self.positions = torch.zeros(self.rows, dtype=torch.long, device=self.device)
        self.active = torch.ones(self.rows, dtype=torch.bool, device=self.device)
        self.limit = torch.tensor([self.limits[i] for i in first], device=self.device)
        self.sequences = torch.full((self.rows, max(self.limits)), self.pad, dtype=torch.long, device=self.device)
        self.sequences[:, 0] = self.start
        tokens = torch.full((self.rows,), self.start, dtype=torch.long, device=self.device)
        while True:
            tokens = self.step(tokens)
            running = int(self.active.sum())
            if self.queue and len(self.sentence) - running >= max(1, math.ceil(REFILL_SHARE * len(self.sentence))):
                tokens = self.refill(tokens)
            elif not self.queue and running == 0:
                break
            elif not self.queue and fast_generation._worth_dropping(len(self.sentence) - running, len(self.sentence)):
                kept = self.active.nonzero().view(-1)
                self.keep(kept)
                tokens = tokens[kept]
        if not script:
            fast_generation._SCRIPTING[self.model] = fast_generation._SCRIPTING.get(self.model, 0.0) + (
                time.perf_counter() - started
            )
        return self.outputs

    def batch(self, sentences: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
        """The padded input ids and attention mask of `sentences`."""
        length = max(len(self.sources[i]) for i in sentences)
        input_ids = torch.full((len(sentences), length), self.pad, dtype=torch.long)
        attention_mask = torch.zeros((len(sentences), length), dtype=torch.long)
        for row, i in enumerate(sentences):
            input_ids[row, : len(self.sources[i])] = torch.tensor(self.sources[i])
            attention_mask[row, : len(self.sources[i])] = 1
        return input_ids.to(self.device), attention_mask.to(self.device)

    def step(self, tokens: torch.LongTensor) -> torch.LongTensor:
        """One step of every row; rows that reach `</s>` or their limit hand their output over and stop."""
        positions = self.positions
        hidden_states = self.steps.step_rows(tokens, positions, int(positions.max()))
        lengths = positions + 1  # the index of the token each row chooses now
        chosen = self.steps.next_tokens(hidden_states)
        chosen = torch.where(lengths == 1, self.forced_bos, chosen) if self.forced_bos is not None else chosen
        if self.forced_eos is not None:
            chosen = torch.where(lengths == self.limit - 1, self.forced_eos, chosen)
        chosen = torch.where(self.active, chosen, self.pad)
        rows = torch.arange(len(tokens), device=self.device)
        self.sequences[rows, lengths] = chosen
        finished = self.active & ((chosen == self.eos) | (lengths + 1 >= self.limit))
        self.positions = torch.where(self.active & ~finished, lengths, 0)  # a finished row idles at position 0
        if finished.any():
            for row in finished.nonzero().view(-1).tolist():
                self.outputs[self.sentence[row]] = self.sequences[row, : int(lengths[row]) + 1].tolist()
            self.active &= ~finished
        return chosen

    def refill(self, tokens: torch.LongTensor) -> torch.LongTensor:
        """Encode the next sentences and give each a finished row, its history and source replaced."""
        free = (~self.active).nonzero().view(-1)[: len(self.queue)]
        new = [self.queue.popleft() for _ in range(len(free))]
        input_ids, attention_mask = self.batch(new)
        session, steps = self.session, self.steps
        kept = [self.sentence[row] for row in self.active.nonzero().view(-1).tolist()]
        longest = max(len(self.sources[i]) for i in kept + new)
        if longest <= SHRINK_SOURCES * steps.source_bias.shape[-1]:
            self.shrink_sources(longest)
        device_type = self.device.type
        in_bf16 = session.weights == "bf16" and not torch.is_autocast_enabled(device_type)
        encoder_states = session.encode(input_ids, attention_mask, in_bf16, session.scripts())
        length = input_ids.shape[1]
        with torch.autocast(device_type, torch.bfloat16, enabled=in_bf16):
            for layer, source in zip(steps.decoder.layers, steps.cache.layers):
                keys, values = layer.encoder_attn.source_keys_and_values(encoder_states, None)
                source.keys[free, :, :length] = keys.to(source.keys.dtype)
                source.values[free, :, :length] = values.to(source.values.dtype)
        bias = torch.zeros(attention_mask.shape, dtype=torch.float32, device=self.device)
        bias.masked_fill_(attention_mask == 0, torch.finfo(torch.float32).min)
        steps.source_bias[free] = torch.finfo(torch.float32).min
        steps.source_bias[free, :, :, :length] = bias[:, None, None]
        for row, i in zip(free.tolist(), new):
            self.sentence[row] = i
        self.limit[free] = torch.tensor([self.limits[i] for i in new], device=self.device)
        self.sequences[free] = self.pad
        self.sequences[free, 0] = self.start
        self.positions[free] = 0
        self.active[free] = True
        tokens = tokens.clone()
        tokens[free] = self.start
        return tokens

    def shrink_sources(self, length: int):
        """Hold the sources' keys and values of the first `length` positions alone: every row's source fits there,
        and cross-attention reads all of a row's positions, masked or not."""
        for source in self.steps.cache.layers:
            source.keys = source.keys.transpose(-1, -2)[..., :length].contiguous().transpose(-1, -2)
            source.values = source.values[:, :, :length].contiguous()
        self.steps.source_bias = self.steps.source_bias[..., :length].contiguous()

    def keep(self, kept: torch.LongTensor):
        """Go on with the rows `kept` alone (the queue is empty): the others have finished."""
        self.steps.keep(kept, int(self.positions.max()) + 1)
        self.sentence = [self.sentence[row] for row in kept.tolist()]
        self.positions, self.active = self.positions[kept], self.active[kept]
        self.limit, self.sequences = self.limit[kept], self.sequences[kept]
