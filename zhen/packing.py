# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""Packed batches: the sentences of a padded batch as one row of real tokens, so that projections, feed-forward layers,
norms, dropout and the LM head do no work on padding, as Transformers' padding-free training does.

[`pack`] packs a training batch (source and target), [`pack_sources`] a source batch alone (the fast decoder's encoder;
[`unpack`] gives its output back in the padded layout). Attention alone needs each sentence apart: the registered
attention function [`packed_sdpa_attention`] (`attn_implementation="zhen_packed_sdpa"`) runs on up to
`attention_groups` groups of sentences of similar length, each padded only to its own longest sentence, and returns to
the packed layout. The [`PackedLayout`] travels to it in the attention kwargs; without one it is plain SDPA. Used by
`zhen.fast_training` and `zhen.fast_generation`, and shipped with them as Hub custom code.
"""

import dataclasses
import functools

import torch
from torch import nn
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS, AttentionInterface

from . import hardware
from .modeling_zhen import shift_tokens_right


PACKED_ATTENTION = "zhen_packed_sdpa"
MIN_GROUP_ROWS = 8  # fewer sentences per attention group cost more in calls than they save in padding


@dataclasses.dataclass
class GroupSide:
    """One side (source or target) of one attention group: `gather` picks the group's padded `(rows * width)` slots
    from the packed tokens (padding slots repeat a real token; masks or causality keep them out); `real` are the slots
    holding real tokens and `tokens` their packed positions; `key_mask` is `(rows, 1, 1, width)` or None when the
    group's sentences have equal length."""

    rows: int
    width: int
    gather: torch.Tensor
    real: torch.Tensor
    tokens: torch.Tensor
    key_mask: torch.Tensor | None


@dataclasses.dataclass
class PackedSide:
    """All groups of one side, and the two indices that move a side's attention states between the packed layout and
    its groups' padded layouts in one `index_select` each (and one backward each, not one per group): [`gather`]
    and [`unpad`], over states viewed as `(tokens * heads, head_dim)`."""

    groups: list[GroupSide]
    tokens: int
    indices: dict = dataclasses.field(default_factory=dict, repr=False)  # heads -> (gather, unpad)

    def __iter__(self):
        return iter(self.groups)

    def gather(self, heads: int) -> torch.Tensor:
        """The rows of `(tokens * heads, head_dim)` states that make each group's `(rows, heads, width, head_dim)`,
        contiguous, the groups end to end."""
        return self._indices(heads)[0]

    def unpad(self, heads: int) -> torch.Tensor:
        """For each packed token and head, its row in the groups' `(rows, heads, width, head_dim)` end to end."""
        return self._indices(heads)[1]

    def _indices(self, heads: int) -> tuple[torch.Tensor, torch.Tensor]:
        if heads not in self.indices:
            device = self.groups[0].gather.device if self.groups else None
            head = torch.arange(heads, device=device)
            unpad = torch.empty(self.tokens, heads, dtype=torch.long, device=device)
            gathers, start = [], 0
            for g in self.groups:
                gathers.append((g.gather.view(g.rows, 1, g.width) * heads + head[:, None]).flatten())
                row, column = g.real // max(g.width, 1), g.real % max(g.width, 1)
                unpad[g.tokens] = start + (row[:, None] * heads + head) * g.width + column[:, None]
                start += g.rows * heads * g.width
            gather = torch.cat(gathers) if gathers else unpad.new_empty(0)
            self.indices[heads] = gather, unpad.flatten()
        return self.indices[heads]

    def to(self, device) -> "PackedSide":
        def moved(group: GroupSide) -> GroupSide:
            mask = None if group.key_mask is None else group.key_mask.to(device)
            tensors = {name: getattr(group, name).to(device) for name in ("gather", "real", "tokens")}
            return dataclasses.replace(group, key_mask=mask, **tensors)

        return PackedSide([moved(g) for g in self.groups], self.tokens)


@dataclasses.dataclass
class PackedLayout:
    """Where each sentence's tokens are in a packed batch, and the groups of sentences attention runs on."""

    source: PackedSide
    target: PackedSide
    source_tokens: int
    target_tokens: int
    attention_kernel: str = "sdpa"  # or "matmul" (see `_matmul_attention`)

    def sides(self, module) -> tuple[PackedSide, PackedSide]:
        """(query side, key side) of an attention module: the target's for decoder self-attention, the target's and
        the source's for cross-attention, the source's for encoder self-attention."""
        if module.is_cross_attention:
            return self.target, self.source
        return (self.target, self.target) if module.is_causal else (self.source, self.source)

    def to(self, device) -> "PackedLayout":
        return dataclasses.replace(self, source=self.source.to(device), target=self.target.to(device))


def pack(batch: dict, decoder_start_token_id: int, pad_token_id: int, attention_groups: int = 4) -> dict:
    """A padded batch (`input_ids`, `attention_mask`, `labels` with -100 after each target, as zhen's collator makes
    it) as one packed row of real tokens: `input_ids`, `position_ids`, `decoder_input_ids`, `decoder_position_ids`
    and `labels` of shape `(1, tokens)`, and the `packed_layout` that [`packed_sdpa_attention`] reads. A target keeps
    its positions up to its last label, so a -100 inside a target stays an (ignored) position, as in the plain model.
    Packing runs on the CPU, whichever device the batch is on: its many small steps on index tensors are cheapest
    there, and the model's device gets the packed tensors once ([`PackedLayout.to`])."""
    batch = {key: batch[key].cpu() for key in ("input_ids", "attention_mask", "labels")}
    labels = batch["labels"]
    positions = torch.arange(1, labels.shape[1] + 1)
    target_keep = positions <= (positions * (labels != -100)).amax(1, keepdim=True)
    decoder_input_ids = shift_tokens_right(labels, pad_token_id, decoder_start_token_id)
    source_keep = batch["attention_mask"].bool()
    groups = length_groups(source_keep.sum(1), attention_groups)
    return _packed_sources(batch["input_ids"], source_keep, groups, target_keep) | {
        "decoder_input_ids": decoder_input_ids[target_keep][None],
        "decoder_position_ids": _positions(target_keep)[None],
        "labels": labels[target_keep][None],
    }


def pack_sources(input_ids: torch.Tensor, attention_mask: torch.Tensor, attention_groups: int = 4) -> dict:
    """The source side of [`pack`] alone, for running the encoder on real tokens only: `input_ids` and `position_ids`
    of shape `(1, tokens)`, and a `packed_layout` without a target. [`unpack`] gives the padded layout back."""
    keep = attention_mask.bool()
    return _packed_sources(input_ids, keep, length_groups(keep.sum(1), attention_groups))


def _packed_sources(input_ids, keep, groups, target_keep=None) -> dict:
    """Packed source `input_ids`, `position_ids`, and the `packed_layout` of the groups (the target's sides too
    where `target_keep` is given)."""
    source_tokens, target_tokens = int(keep.sum()), 0 if target_keep is None else int(target_keep.sum())
    target = [] if target_keep is None else _group_sides(target_keep, groups)
    source = PackedSide(_group_sides(keep, groups), source_tokens)
    layout = PackedLayout(source, PackedSide(target, target_tokens), source_tokens, target_tokens)
    return {"input_ids": input_ids[keep][None], "position_ids": _positions(keep)[None], "packed_layout": layout}


def unpack(states: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Packed `(1, tokens, dim)` states of [`pack_sources`] in the padded `(batch, length, dim)` layout, zeros at
    padding."""
    padded = states.new_zeros(*attention_mask.shape, states.shape[-1])
    padded[attention_mask.bool()] = states[0]
    return padded


def _positions(keep: torch.Tensor) -> torch.Tensor:
    return (keep.long().cumsum(1) - 1)[keep]


def length_groups(lengths: torch.Tensor, max_groups: int) -> list[torch.Tensor]:
    """Sentence indices sorted by length and cut into at most `max_groups` groups of equal size (of at least
    `MIN_GROUP_ROWS` sentences); neighbouring groups of the same longest length are merged."""
    order = lengths.argsort(stable=True)
    groups = []
    for rows in order.tensor_split(max(1, min(max_groups, len(order) // MIN_GROUP_ROWS))):
        if groups and lengths[rows[-1]] == lengths[groups[-1][-1]]:
            groups[-1] = torch.cat([groups[-1], rows])
        else:
            groups.append(rows)
    return groups


def _group_sides(keep: torch.Tensor, groups: list[torch.Tensor]) -> list[GroupSide]:
    lengths = keep.sum(1)
    starts = lengths.cumsum(0) - lengths  # packed position of each sentence's first token
    sides = []
    for rows in groups:
        width = int(lengths[rows].max())
        columns = torch.arange(width)
        group_keep = columns[None] < lengths[rows][:, None]  # (rows, width)
        slots = starts[rows][:, None] + torch.where(group_keep, columns[None], 0)
        real = group_keep.flatten().nonzero().squeeze(1)
        key_mask = None if group_keep.all() else group_keep[:, None, None, :]
        sides.append(GroupSide(len(rows), width, slots.flatten(), real, slots.flatten()[real], key_mask))
    return sides


def packed_sdpa_attention(module, query, key, value, attention_mask, scaling, dropout=0.0, packed_layout=None,
                          **kwargs):  # fmt: skip
    """Attention over a packed batch, one group of sentences of similar length at a time (see [`pack`]), with the
    kernel the layout names; plain `sdpa_attention_forward` for any other batch. `query`, `key`, `value` are
    `(1, heads, tokens, head_dim)`."""
    if packed_layout is None:
        return sdpa_attention_forward(module, query, key, value, attention_mask, scaling=scaling, dropout=dropout,
                                      **kwargs)  # fmt: skip
    query_side, key_side = packed_layout.sides(module)
    heads, head_dim = query.shape[1], query.shape[-1]
    in_float32 = query.dtype == torch.bfloat16 and torch.is_grad_enabled() and hardware.emulates_bf16(query.device)
    attend = _matmul_attention if packed_layout.attention_kernel == "matmul" else _sdpa_attention
    # bf16 attention on a CPU that emulates bf16 is several times slower than float32: there it runs in float32
    padded = [_padded(t, side, in_float32) for t, side in ((query, query_side), (key, key_side), (value, key_side))]
    outputs = []
    for q_group, k_group, q, k, v in zip(query_side, key_side, *padded):
        if q_group.width == 0:  # sentences without target tokens (all labels -100)
            continue
        key_mask = None if module.is_causal else k_group.key_mask  # right-padded targets: causality keeps padding out
        out = attend(q, k, v, key_mask, module.is_causal, scaling, dropout if module.training else 0.0)
        outputs.append(out.reshape(-1, head_dim))
    output = torch.cat(outputs) if outputs else query.new_empty(0, head_dim)
    output = _Unpad.apply(output, query_side.unpad(heads)).to(query.dtype)
    return output.view(1, -1, heads, head_dim), None


def _sdpa_attention(query, key, value, key_mask, causal: bool, scaling: float, dropout: float) -> torch.Tensor:
    return nn.functional.scaled_dot_product_attention(
        query, key, value, attn_mask=key_mask, dropout_p=dropout, is_causal=causal, scale=scaling
    )


def _matmul_attention(query, key, value, key_mask, causal: bool, scaling: float, dropout: float) -> torch.Tensor:
    """softmax(q kᵀ · scaling + mask) v as `eager_attention_forward` computes it (softmax in float32; its short rows
    as columns, `zhen.hardware.row_softmax`), the scaling and the mask added in the product (`baddbmm`): on CPUs, for
    the short groups of a translation batch, several times faster forward and backward than SDPA's flash kernel
    (README, Performance)."""
    rows, heads, width, dim = query.shape
    query, key, value = (t.flatten(0, 1) for t in (query, key, value))  # (rows * heads, width, dim)
    bias = _future(width, query.device, query.dtype) if causal else None
    if key_mask is not None:
        hidden = torch.zeros(key_mask.shape, dtype=query.dtype, device=query.device).masked_fill_(~key_mask, -torch.inf)
        hidden = hidden.expand(rows, heads, 1, key.shape[1]).reshape(rows * heads, 1, key.shape[1])
        bias = hidden if bias is None else bias + hidden
    if bias is None:
        scores = torch.bmm(query, key.transpose(1, 2)) * scaling
    else:
        scores = torch.baddbmm(bias, query, key.transpose(1, 2), alpha=scaling)
    weights = hardware.row_softmax(scores).to(query.dtype)
    weights = nn.functional.dropout(weights, p=dropout, training=dropout > 0)
    return torch.bmm(weights, value).view(rows, heads, width, dim)


@functools.cache
def _future(width: int, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    """(1, width, width) additive mask of the positions after each query (-inf): what a causal query may not see."""
    return torch.full((1, width, width), -torch.inf, dtype=dtype, device=device).triu(1)


def _padded(states: torch.Tensor, side: PackedSide, in_float32: bool) -> list[torch.Tensor]:
    """`(1, heads, tokens, head_dim)` states -> each group's `(rows, heads, width, head_dim)`, contiguous, from one
    gather (after a copy into the `(tokens, heads, head_dim)` layout where the states are views of a fused
    projection's output)."""
    heads, head_dim = states.shape[1], states.shape[-1]
    by_token = states.squeeze(0).transpose(0, 1).contiguous()
    padded = _Gather.apply(by_token.view(-1, head_dim), side.gather(heads), side.unpad(heads))
    padded = padded.float() if in_float32 else padded
    sizes = [g.rows * heads * g.width for g in side]
    return [p.view(g.rows, heads, g.width, head_dim) for p, g in zip(padded.split(sizes), side)]


class _Gather(torch.autograd.Function):
    """`states.index_select(0, gather)`, whose backward reads each state's gradient from its own slot (`unpad`) where
    `index_select`'s sums it over every slot that copied it (a scatter): the other slots are padding, which attention
    masks (keys, values) or whose output it drops (queries, [`_Unpad`]), so that their gradient is zero."""

    @staticmethod
    def forward(ctx, states: torch.Tensor, gather: torch.Tensor, unpad: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(unpad)
        return states.index_select(0, gather)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        (unpad,) = ctx.saved_tensors
        return grad.index_select(0, unpad), None, None


class _Unpad(torch.autograd.Function):
    """`padded.index_select(0, unpad)`, whose backward copies where `index_select`'s adds (`unpad` repeats no slot),
    and leaves the padding slots' gradient zero."""

    @staticmethod
    def forward(ctx, padded: torch.Tensor, unpad: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(unpad)
        ctx.slots = len(padded)
        return padded.index_select(0, unpad)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        (unpad,) = ctx.saved_tensors
        return grad.new_zeros(ctx.slots, *grad.shape[1:]).index_copy_(0, unpad, grad), None


def register_attention(name: str, function) -> None:
    """Register `function` as `attn_implementation=name` (with SDPA's mask). A copy of this file loaded as Hub custom
    code registers only names not taken, so that where zhen is installed its own functions, reading its own
    `zhen.hardware`, stay the ones used."""
    if __name__.startswith("zhen.") or name not in ALL_ATTENTION_FUNCTIONS:
        AttentionInterface.register(name, function)
        AttentionMaskInterface.register(name, sdpa_mask)


register_attention(PACKED_ATTENTION, packed_sdpa_attention)


__all__ = [
    "PACKED_ATTENTION",
    "GroupSide",
    "PackedLayout",
    "PackedSide",
    "length_groups",
    "pack",
    "pack_sources",
    "packed_sdpa_attention",
    "register_attention",
    "unpack",
]
