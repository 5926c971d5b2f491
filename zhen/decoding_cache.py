# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""The key/value caches of a decoding run, as `ZhenAttention` reads and writes them (the `EncoderDecoderCache`
interface), preallocated for the whole output and written in place.

- [`LineageCache`]: the beams of a sentence side by side; each row finds its history through pointers to the beam slot
  that holds it at each position, so beam search's reorder rewrites pointers and moves no keys or values (where
  `generate` gathers the whole cache every step). The source's cross-attention keys and values are held once per
  sentence, not per beam.
- [`StaticDecodingCache`]: a row's history in its own row, the shapes a CUDA graph replays
  (`zhen.decoder_steps.StaticDecoderSteps`).
- [`Workspace`]: the memory a session's caches keep from batch to batch (fresh memory costs a page fault per page on
  first touch).
- [`row_index`]: where attention's float32 products over a cache are FBGEMM's weighted sums of its rows
  (`zhen.layer_steps.multiply`), the rows each sum reads.
"""

import math
import threading

import torch

from .layer_steps import RowIndex, rows_fit, write_levels, write_step


# Whether this thread's decoding takes attention's float32 products as FBGEMM row sums (`zhen.hardware`: `fbgemm`),
# as the session it decodes for decided for its device (`zhen.fast_generation.FastDecoder.generate` sets it).
DECODING = threading.local()


def row_index(table: torch.Tensor, queries: int) -> "RowIndex | None":
    """The rows of `table` that [`zhen.layer_steps.multiply`] sums for `weights @ table`, `queries` rows of weights a
    block, where this thread's decoding takes products as FBGEMM's weighted row sums (a session on a CPU with FBGEMM)
    and the table's layout allows ([`zhen.layer_steps.rows_fit`]); else None."""
    if not (getattr(DECODING, "row_sums", False) and rows_fit(table)):
        return None
    n, heads, k, m = table.shape
    return _row_index(n * heads, queries, k, table.stride(1) // m, table.device)


_ROW_INDEX: dict[tuple, tuple[torch.Tensor, torch.Tensor]] = {}
MAX_ROW_INDICES = 64  # a step's layers share one; each batch shape and length has its own


def _row_index(blocks: int, queries: int, k: int, rows_per_block: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    """The table rows each weighted sum reads (block `b`'s first `k` rows, once per query) and where each sum starts."""
    key = (blocks, queries, k, rows_per_block, device)
    found = _ROW_INDEX.get(key)
    if found is None:
        if len(_ROW_INDEX) >= MAX_ROW_INDICES:
            _ROW_INDEX.clear()
        starts = torch.arange(blocks, device=device) * rows_per_block
        index = (starts[:, None, None] + torch.arange(k, device=device)).expand(blocks, queries, k).reshape(-1)
        found = _ROW_INDEX[key] = index, torch.arange(0, blocks * queries * k, k, device=device)
    return found


class StaticDecodingCache:
    """The cache of a decoding run, as `ZhenAttention` reads and writes it (the `EncoderDecoderCache` interface):
    `self_attention_cache.update(key, value, layer)` writes the step's keys/values in place at `position` and returns
    the history so far; `cross_attention_cache.layers[layer].keys/values` hold the source's, once per sentence. The
    self-attention caches are `(rows, heads, max_length, head_dim)`, a row's history in its own row: what static
    shapes need (`zhen.decoder_steps.StaticDecoderSteps`); [`LineageCache`] is the one other steps use."""

    def __init__(self, source_keys_values: list[tuple[torch.Tensor, torch.Tensor]], dtype: torch.dtype,
                 workspace: "Workspace | None" = None):  # fmt: skip
        self.cross_attention_cache = self
        self.self_attention_cache = self
        self.workspace = workspace or Workspace()
        # The source's keys are held by dimension, (batch, heads, head_dim, source) in memory: the rows that
        # `zhen.fast_generation.decoding_attention` sums, weighted by the query ([`row_index`]).
        self.layers = [
            _SourceLayer(
                self.workspace.copy(("source", i, 0), keys.transpose(-1, -2), dtype).transpose(-1, -2),
                self.workspace.copy(("source", i, 1), values, dtype),
            )
            for i, (keys, values) in enumerate(source_keys_values)
        ]
        self.is_updated = dict.fromkeys(range(len(self.layers)), True)
        self.keys: list[torch.Tensor | None] = [None] * len(self.layers)
        self.values: list[torch.Tensor | None] = [None] * len(self.layers)
        self.position = 0
        # Static shapes (`zhen.decoder_steps.StaticDecoderSteps`): the step writes at the position this tensor holds
        # and attends over the whole cache, masked; the cache is zeroed (a masked score of garbage could be NaN) and
        # never reallocated.
        self.write_position: torch.Tensor | None = None

    def allocate(self, rows: int, max_length: int):
        self.rows, self.max_length = rows, max_length

    def update(self, key: torch.Tensor, value: torch.Tensor, layer_idx: int) -> tuple[torch.Tensor, torch.Tensor]:
        self.allocate_layer(layer_idx, key.shape[1], key.shape[3], key.dtype, key.device)
        if self.write_position is not None:
            self.keys[layer_idx].index_copy_(2, self.write_position, key)
            self.values[layer_idx].index_copy_(2, self.write_position, value)
            return self.keys[layer_idx], self.values[layer_idx]
        end = self.position + key.shape[2]
        self.keys[layer_idx][:, :, self.position : end] = key
        self.values[layer_idx][:, :, self.position : end] = value
        return self.keys[layer_idx][:, :, :end], self.values[layer_idx][:, :, :end]

    def allocate_layer(self, layer_idx: int, heads: int, head_dim: int, dtype: torch.dtype, device):
        """Layer `layer_idx`'s caches, in the dtype the layer computes in, where this batch has none yet."""
        if self.keys[layer_idx] is None:
            shape = self.cache_shape(heads, head_dim)
            self.keys[layer_idx] = self.new_cache(("keys", layer_idx), shape, dtype, device)
            self.values[layer_idx] = self.new_cache(("values", layer_idx), shape, dtype, device)

    def cache_shape(self, heads: int, head_dim: int) -> tuple[int, ...]:
        return self.rows, heads, self.max_length, head_dim

    def allocate_layers(self, heads: int, head_dim: int, dtype: torch.dtype, device):
        for layer_idx in range(len(self.keys)):
            self.allocate_layer(layer_idx, heads, head_dim, dtype, device)

    def new_cache(self, name, shape, dtype: torch.dtype, device) -> torch.Tensor:
        cache = self.workspace.empty(name, shape, dtype, device)
        return cache if self.write_position is None else cache.zero_()

    @property
    def source_keys(self) -> list[torch.Tensor]:
        return [layer.keys for layer in self.layers]

    @property
    def source_values(self) -> list[torch.Tensor]:
        return [layer.values for layer in self.layers]

    def get_seq_length(self) -> int:
        return self.position

    def history(self, length: int) -> "tuple[torch.Tensor | None, RowIndex | None] | None":
        """Where each row's history of `length` positions lies ([`LineageCache.history`]); None: in its own row."""
        return None

    def keep(self, rows: torch.LongTensor, sentences: torch.LongTensor, length: int):
        """Drop every row but `rows` (and every source but `sentences`'), both ascending: what finished needs no more
        steps. What is kept moves to the first rows of the memory it is in."""
        self.keep_caches(rows, length)
        self.keep_sources(sentences)
        self.rows = len(rows)

    def keep_caches(self, index: torch.LongTensor, length: int):
        """Keep the self-attention caches' entries `index` along their first dimension, up to `length` positions."""
        for caches in (self.keys, self.values):
            for i, cache in enumerate(caches):
                if cache is not None:
                    caches[i] = keep_rows(cache, index, length)

    def keep_sources(self, sentences: torch.LongTensor):
        for layer in self.layers:
            layer.keys, layer.values = keep_rows(layer.keys, sentences), keep_rows(layer.values, sentences)

    def reorder(self, rows: torch.LongTensor, length: int):
        """Make row `i` continue the history of row `rows[i]`: only the rows whose history changes are copied
        (gathered, then written back in place, where a CUDA graph reads them)."""
        moved = (rows != torch.arange(len(rows), device=rows.device)).nonzero().view(-1)
        if len(moved) == 0:
            return
        sources = rows[moved]
        for cache in (*self.keys, *self.values):
            history = cache[:, :, :length]
            history.index_copy_(0, moved, history.index_select(0, sources))


class LineageCache(StaticDecodingCache):
    """The decoding cache whose self-attention caches hold the beams of a sentence side by side, `(batch, heads,
    max_length, beams, head_dim)`, and find each row's history through `origins` `(rows, max_length)`: the beam slot
    that holds, at each position, the keys and values of the row's ancestor there. A row writes its step in its own
    slot; beam search's reorder rewrites the rows of `origins` and moves no keys or values (copying the caches every
    step is what beam search costs beyond its products in `generate`, Marian or CTranslate2). Beam search's first
    steps run one row per sentence, in the first slot; then every beam's history points there
    ([`attend_history`])."""

    def __init__(self, source_keys_values: list[tuple[torch.Tensor, torch.Tensor]], dtype: torch.dtype,
                 workspace: "Workspace | None" = None, beams: int = 1):  # fmt: skip
        super().__init__(source_keys_values, dtype, workspace)
        self.beams = beams
        self.sentences = len(source_keys_values[0][0])
        self.device = source_keys_values[0][0].device
        self.origins: torch.Tensor | None = None
        self.found = None  # the step's history: (length, what `history` found)
        self.end = 0  # after a pass over several positions (`DecoderSteps.steps`): the position after them

    def allocate(self, rows: int, max_length: int):
        super().allocate(rows, max_length)
        self.origins, self.found = self.own_slots(rows), None

    def own_slots(self, rows: int) -> torch.LongTensor:
        """Each row's own slot, at every position: `rows // sentences` rows a sentence."""
        slots = torch.arange(rows, device=self.device) % (rows // self.sentences)
        return slots[:, None].repeat(1, self.max_length)

    def cache_shape(self, heads: int, head_dim: int) -> tuple[int, ...]:
        return self.sentences, heads, self.max_length, self.beams, head_dim

    def update(self, key: torch.Tensor, value: torch.Tensor, layer_idx: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Write the step's keys and values at `position`: one position a row; or, in a pass over several positions of
        a batch of one sentence, the nodes of each position in its first slots
        (`zhen.decoder_steps.DecoderSteps.steps`)."""
        self.allocate_layer(layer_idx, key.shape[1], key.shape[3], key.dtype, key.device)
        keys, values = self.keys[layer_idx], self.values[layer_idx]
        if key.shape[2] == 1:
            write_step(keys, self.position, key)
            write_step(values, self.position, value)
            return keys[:, :, : self.position + 1], values[:, :, : self.position + 1]
        return write_levels(keys, self.position, key, self.end), write_levels(values, self.position, value, self.end)

    def history(self, length: int) -> "tuple[torch.Tensor | None, RowIndex | None]":
        """For a step over `length` positions (once a step; its layers share it): where each row's history lies among
        its sentence's scores (`(batch, heads, queries, length)`; None with one slot a sentence: in place), and the
        rows of the values' table that its weighted sum of values reads ([`zhen.layer_steps.multiply`]), where this
        thread's decoding takes products as row sums and the cache is float32 ([`row_index`])."""
        if self.found is not None and self.found[0] == length:
            return self.found[1]
        cache = self.values[0]
        heads, queries = cache.shape[1], self.rows // self.sentences
        row_sums = getattr(DECODING, "row_sums", False) and cache.dtype == torch.float32
        if self.beams == 1:
            rows = _row_index(self.sentences * heads, 1, length, self.max_length, self.device) if row_sums else None
            found = None, rows
        else:
            positions = torch.arange(length, device=self.device) * self.beams
            columns = (positions + self.origins[:, :length]).view(self.sentences, 1, queries, length)
            value_rows = None
            if row_sums:  # row j, slot s of head h of sentence b: ((b * heads + h) * max_length + j) * beams + s
                blocks = torch.arange(self.sentences * heads, device=self.device) * (self.max_length * self.beams)
                index = (blocks.view(self.sentences, heads, 1, 1) + columns).view(-1)
                value_rows = index, torch.arange(0, len(index), length, device=self.device)
            found = columns.expand(self.sentences, heads, queries, length), value_rows
        self.found = length, found
        return found

    def reorder(self, rows: torch.LongTensor, length: int):
        """Make row `i` continue the history of row `rows[i]` (of the same sentence): its pointers, up to `length`."""
        self.origins[:, :length] = self.origins[:, :length].index_select(0, rows)
        self.found = None

    def follow(self, origins: torch.LongTensor, length: int):
        """Make each row's history the slots `origins` `(rows, >= length)` names up to `length`, its own slot after."""
        self.origins[:, :length] = origins[:, :length]
        self.origins[:, length:] = self.own_slots(self.rows)[:, length:]
        self.found = None

    def expand(self, rows: torch.LongTensor, length: int):
        """From one row per sentence to `len(rows)`: row `i` continues the history of sentence `rows[i]`."""
        shared = self.origins
        self.rows = len(rows)
        self.origins = self.own_slots(self.rows)
        self.origins[:, :length] = shared[:, :length].index_select(0, rows)
        self.found = None

    def keep(self, rows: torch.LongTensor, sentences: torch.LongTensor, length: int):
        """Drop every sentence but `sentences`, and so every row but theirs (`rows`), both ascending."""
        self.keep_caches(sentences, length)
        self.keep_sources(sentences)
        self.origins = keep_rows(self.origins, rows)
        self.rows, self.sentences, self.found = len(rows), len(sentences), None


def keep_rows(tensor: torch.Tensor, rows: torch.LongTensor, length: int | None = None) -> torch.Tensor:
    """`tensor[rows]` (up to `length` along dimension 2) moved into the first rows of `tensor`'s own memory."""
    history = tensor if length is None else tensor[:, :, :length]
    history[: len(rows)] = history.index_select(0, rows)
    return tensor[: len(rows)]


class Workspace:
    """Memory a decoding session keeps from batch to batch. Every batch needs the same large tensors (the caches, the
    source's keys and values, the logits); fresh memory costs the CPU a page fault per 4 KiB page on first touch,
    kept memory none (`benchmarks/results/2026-11-26-session-workspace.md`). `empty(name, ...)` returns a
    tensor over the memory kept under `name`, which must not be in use any more: the caller's previous tensor of
    that name is overwritten. Its memory is zeroed when first made: a cache's slots that a tree of beams masks out
    (`zhen.decoder_steps.DecoderSteps.steps`) must hold finite numbers, which weigh nothing."""

    def __init__(self):
        self.kept: dict[object, torch.Tensor] = {}

    def empty(self, name, shape, dtype: torch.dtype, device) -> torch.Tensor:
        size = math.prod(shape)
        kept = self.kept.get(name)
        if kept is None or kept.dtype != dtype or kept.device != torch.device(device) or kept.numel() < size:
            grown = 2 * kept.numel() if kept is not None and kept.dtype == dtype else 0  # longer batches follow
            kept = self.kept[name] = torch.zeros(max(size, grown), dtype=dtype, device=device)
        return kept[:size].view(shape)

    def copy(self, name, tensor: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        """`tensor` in `dtype`, contiguous, in kept memory."""
        return self.empty(name, tensor.shape, dtype, tensor.device).copy_(tensor)


class _SourceLayer:
    def __init__(self, keys: torch.Tensor, values: torch.Tensor):
        self.keys, self.values = keys, values
