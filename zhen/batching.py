# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""Token-budget batching with length bucketing, as fairseq and Marian batch translation data.

Examples are sorted by length (ties broken at random, so batches change from epoch to epoch), packed greedily into
batches whose padded size `batch size x longest side` stays within `max_tokens`, and the batch order is shuffled. All
of it is a pure function of `(seed, epoch)`, which is what makes an interrupted run resume on exactly the same data.
"""

from dataclasses import dataclass

import numpy as np
import torch


def token_budget_batches(
    source_lengths, target_lengths, max_tokens: int, seed: int, epoch: int, shuffle: bool = True
) -> list[list[int]]:
    """Indices of each batch for one epoch; every example appears exactly once.

    The cost of a batch is `len(batch) * max(longest source, longest target)`: the tokens it occupies once padded.
    """
    source_lengths, target_lengths = np.asarray(source_lengths), np.asarray(target_lengths)
    lengths = np.maximum(source_lengths, target_lengths)
    if len(lengths) and lengths.max() > max_tokens:
        raise ValueError(f"An example of {lengths.max()} tokens exceeds max_tokens={max_tokens}; filter it out first.")
    rng = np.random.default_rng([seed, epoch])
    order = np.lexsort((rng.random(len(lengths)), lengths)) if shuffle else np.argsort(lengths, kind="stable")
    batches, batch, longest = [], [], 0
    for index in order.tolist():
        length = int(lengths[index])
        if batch and (len(batch) + 1) * max(longest, length) > max_tokens:
            batches.append(batch)
            batch, longest = [], 0
        batch.append(index)
        longest = max(longest, length)
    if batch:
        batches.append(batch)
    if shuffle:
        rng.shuffle(batches)
    return batches


def weighted_epoch(corpus, weights, seed: int, epoch: int) -> np.ndarray:
    """Indices of the examples one epoch holds when each corpus is sampled by its weight: `corpus[i]` is example
    `i`'s corpus, `weights[c]` how many times over corpus `c` goes into an epoch. The whole part of a weight repeats
    every example; the fraction adds that share of the corpus, drawn without replacement anew each epoch (and a
    weight below 1 is only that share). A pure function of `(seed, epoch)`, like the batches."""
    corpus = np.asarray(corpus)
    rng = np.random.default_rng([seed, epoch, 1])
    parts = []
    for c, weight in enumerate(weights):
        members = np.flatnonzero(corpus == c)
        whole, fraction = divmod(float(weight), 1.0)
        parts += [members] * int(whole)
        parts.append(rng.choice(members, size=round(fraction * len(members)), replace=False))
    return np.sort(np.concatenate(parts)) if parts else np.arange(0)


def shard_batches(batches: list[list[int]], rank: int, world_size: int) -> list[list[int]]:
    """This process's share of the epoch's batches. Every process gets the same number of batches (DDP steps in
    lockstep): when the count does not divide evenly, the first batches are reused to fill the last round."""
    if world_size == 1:
        return batches
    rounds = -(-len(batches) // world_size)
    padded = batches + batches[: rounds * world_size - len(batches)]
    return padded[rank::world_size]


def padding_fraction(batches: list[list[int]], source_lengths, target_lengths) -> float:
    """Share of the padded source and target tensors that is padding."""
    source_lengths, target_lengths = np.asarray(source_lengths), np.asarray(target_lengths)
    real = padded = 0
    for batch in batches:
        src, tgt = source_lengths[batch], target_lengths[batch]
        real += int(src.sum() + tgt.sum())
        padded += len(batch) * int(src.max() + tgt.max())
    return 1.0 - real / padded if padded else 0.0


@dataclass
class Seq2SeqCollator:
    """Pads `input_ids` with `pad_token_id` and `labels` with -100; the model builds decoder inputs from labels."""

    pad_token_id: int

    def __call__(self, examples: list[dict] | dict[str, list]) -> dict[str, torch.Tensor]:
        """Takes a list of examples, or the dict of columns that indexing a `datasets.Dataset` with a list gives."""
        columns = examples if isinstance(examples, dict) else {k: [e[k] for e in examples] for k in examples[0]}
        input_ids = _pad(columns["input_ids"], self.pad_token_id)
        return {
            "input_ids": input_ids,
            "attention_mask": input_ids.ne(self.pad_token_id).long(),
            "labels": _pad(columns["labels"], -100),
        }


def _pad(sequences: list[list[int]], value: int) -> torch.Tensor:
    out = torch.full((len(sequences), max(map(len, sequences))), value, dtype=torch.long)
    for row, sequence in enumerate(sequences):
        out[row, : len(sequence)] = torch.as_tensor(sequence)
    return out
