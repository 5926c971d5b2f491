# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""PyTorch zhen model: an encoder-decoder Transformer for English⇄Chinese translation.

Reads top to bottom: position embeddings → attention → layers → stacks → models. One class serves every variant the
config allows: sinusoidal, learned or rotary positions; pre- or post-norm; eager, sdpa, flash or flex attention.
"""

import functools
import math
from collections.abc import Callable

import torch
from torch import nn
from transformers import initialization as init
from transformers.activations import ACT2FN
from transformers.cache_utils import Cache, DynamicCache, EncoderDecoderCache
from transformers.generation import GenerationMixin
from transformers.masking_utils import create_bidirectional_mask, create_causal_mask
from transformers.modeling_layers import GradientCheckpointingLayer
from transformers.modeling_outputs import (
    BaseModelOutput,
    BaseModelOutputWithPastAndCrossAttentions,
    Seq2SeqLMOutput,
    Seq2SeqModelOutput,
)
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS, PreTrainedModel
from transformers.processing_utils import Unpack
from transformers.utils import TransformersKwargs, can_return_tuple, logging
from transformers.utils.generic import merge_with_config_defaults
from transformers.utils.output_capturing import OutputRecorder, capture_outputs

from .configuration_zhen import ZhenConfig


logger = logging.get_logger(__name__)

# Written into every saved config.json so that the checkpoint loads through all three Auto classes as Hub custom code.
AUTO_MAP = {
    "AutoConfig": "configuration_zhen.ZhenConfig",
    "AutoModel": "modeling_zhen.ZhenModel",
    "AutoModelForSeq2SeqLM": "modeling_zhen.ZhenForConditionalGeneration",
}


def shift_tokens_right(input_ids: torch.Tensor, pad_token_id: int, decoder_start_token_id: int) -> torch.Tensor:
    """Shift labels one token to the right to make decoder inputs; `-100` (ignored labels) becomes padding."""
    shifted = input_ids.new_zeros(input_ids.shape)
    shifted[:, 1:] = input_ids[:, :-1]
    shifted[:, 0] = decoder_start_token_id
    return shifted.masked_fill_(shifted == -100, pad_token_id)


# --------------------------------------------------------------------------------------------------------------
# Positions
# --------------------------------------------------------------------------------------------------------------


class ZhenSinusoidalPositionalEmbedding(nn.Module):
    """Fixed sinusoidal positions of "Attention Is All You Need", laid out as Marian and fairseq do: the sines of all
    frequencies in the first half of the features, the cosines in the second half."""

    weight: torch.Tensor

    def __init__(self, num_positions: int, embedding_dim: int):
        super().__init__()
        self.num_positions, self.embedding_dim = num_positions, embedding_dim
        # Not persistent: the table is a function of its shape, so checkpoints need not carry it.
        self.register_buffer("weight", self.create_weight(), persistent=False)

    def create_weight(self) -> torch.Tensor:
        positions = torch.arange(self.num_positions, dtype=torch.float64)[:, None]
        exponents = torch.arange(0, self.embedding_dim, 2, dtype=torch.float64) / self.embedding_dim
        angles = positions / 10000**exponents  # (num_positions, ceil(dim / 2))
        table = torch.cat([angles.sin(), angles[:, : self.embedding_dim // 2].cos()], dim=-1)
        return table.float()

    def forward(self, position_ids: torch.Tensor) -> torch.Tensor:
        return nn.functional.embedding(position_ids, self.weight)


class ZhenRotaryEmbedding(nn.Module):
    """Rotary position embedding (Su et al., 2021) in the non-interleaved ("rotate half") layout of Llama and the other
    Transformers models. Returns the cosines and sines for `position_ids`, which `apply_rotary_pos_emb` applies."""

    inv_freq: torch.Tensor

    def __init__(self, head_dim: int, theta: float):
        super().__init__()
        self.head_dim, self.theta = head_dim, theta
        self.register_buffer("inv_freq", self.compute_inv_freq(), persistent=False)

    def compute_inv_freq(self) -> torch.Tensor:
        return 1.0 / self.theta ** (torch.arange(0, self.head_dim, 2, dtype=torch.float) / self.head_dim)

    @torch.no_grad()
    def forward(self, x: torch.Tensor, position_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        freqs = position_ids[..., None].float() * self.inv_freq.to(x.device)  # (batch, seq, head_dim / 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim: int = 1):
    """Rotate queries and keys `(batch, heads, seq, head_dim)` by the angles of their positions."""
    cos, sin = cos.unsqueeze(unsqueeze_dim), sin.unsqueeze(unsqueeze_dim)
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


# --------------------------------------------------------------------------------------------------------------
# Dropout
# --------------------------------------------------------------------------------------------------------------


def dropout(x: torch.Tensor, p: float, training: bool, residual: torch.Tensor | None = None) -> torch.Tensor:
    """`nn.functional.dropout(x)`, plus `residual` when given; on CPU through [`CpuDropout`], at half the cost."""
    if training and x.device.type == "cpu" and 0 < round(p * 32768) < 32768:
        return CpuDropout.apply(x, p, residual)
    x = nn.functional.dropout(x, p=p, training=training)
    return x if residual is None else residual + x


def widen(mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """A boolean mask as 0/1 of `dtype`, converted from its bytes: PyTorch's CPU conversion is vectorised from uint8
    but not from bool, which takes twice as long."""
    return mask.view(torch.uint8).to(dtype)


class CpuDropout(torch.autograd.Function):
    """Dropout whose keep-mask comes from 15-bit random integers, four per 64-bit draw, where `bernoulli_` draws a float
    per element: on CPU the random numbers are most of dropout's cost. `p` is rounded to a multiple of 1/32768 (fused
    GPU kernels round it to 1/256) and kept values are scaled by 1 / (1 - rounded p), so expectations are unchanged.
    An optional residual is added in the same pass. The mask is saved as booleans and widened to the input's dtype
    when used: a saved float mask would save a pass but cost four times the fresh memory, which costs more here."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, p: float, residual: torch.Tensor | None = None) -> torch.Tensor:
        threshold = round(p * 32768)
        ctx.scale = 32768 / (32768 - threshold)
        draws = torch.empty((x.numel() + 3) // 4, dtype=torch.int64).random_()  # uniform on [0, 2**63)
        bits = draws.bitwise_and_(0x7FFF_7FFF_7FFF_7FFF).view(torch.int16)[: x.numel()].view(x.shape)
        keep = bits >= threshold
        ctx.save_for_backward(keep)
        mask = widen(keep, x.dtype)  # multiplying by it beats torch.where on a boolean mask
        if residual is None:
            return mask.mul_(x).mul_(ctx.scale)
        return torch.addcmul(residual, x, mask, value=ctx.scale)

    @staticmethod
    def backward(ctx, grad_output: torch.Tensor):
        (keep,) = ctx.saved_tensors
        grad = widen(keep, grad_output.dtype).mul_(grad_output).mul_(ctx.scale)
        return grad, None, grad_output if ctx.needs_input_grad[2] else None


# --------------------------------------------------------------------------------------------------------------
# bfloat16 on CPUs without bfloat16 instructions
# --------------------------------------------------------------------------------------------------------------


@functools.cache
def cpu_has_bf16() -> bool:
    """Whether this CPU multiplies bfloat16 natively (AVX512-BF16 or AMX); without, PyTorch emulates bf16, about 4x
    slower than float32."""
    checks = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")  # private; present since torch 2.3
    return any(getattr(torch.cpu, check, lambda: False)() for check in checks)


def emulates_bf16(*tensors: torch.Tensor) -> bool:
    """Whether products of `tensors` would run in bfloat16 (under bf16 autocast, or all of them bf16) on a CPU that
    has no bfloat16 instructions."""
    if tensors[0].device.type != "cpu" or cpu_has_bf16():
        return False
    if torch.is_autocast_enabled("cpu"):
        return torch.get_autocast_dtype("cpu") == torch.bfloat16
    return all(t.dtype == torch.bfloat16 for t in tensors)


class Bf16LinearInFloat32(torch.autograd.Function):
    """`linear(x, weight, bias)` of bfloat16 tensors, with a bfloat16 result and bfloat16 gradients, multiplied by
    float32 GEMMs on their float32 values. That is the arithmetic of a bfloat16 GEMM (the product of two bf16 numbers
    is exact in float32, and bf16 GEMMs accumulate in float32), at float32 speed where the CPU has no bf16
    instructions: PyTorch's emulated bf16 GEMM converts to float32 too, but runs at a quarter of float32's rate."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
        ctx.save_for_backward(x, weight)
        ctx.has_bias = bias is not None
        return nn.functional.linear(x.float(), weight.float(), None if bias is None else bias.float()).to(x.dtype)

    @staticmethod
    def backward(ctx, grad_output: torch.Tensor):
        x, weight = ctx.saved_tensors
        grad = grad_output.float().flatten(0, -2)
        grad_x = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:
            grad_x = (grad @ weight.float()).to(x.dtype).view(x.shape)
        if ctx.needs_input_grad[1]:
            grad_weight = (grad.t() @ x.flatten(0, -2).float()).to(weight.dtype)
        if ctx.has_bias and ctx.needs_input_grad[2]:
            grad_bias = grad.sum(0).to(weight.dtype)
        return grad_x, grad_weight, grad_bias


class ZhenLinear(nn.Linear):
    """`nn.Linear` whose bfloat16 products (under bf16 autocast, or with bf16 weights) of at least
    `FLOAT32_GEMM_MIN_ROWS` rows run through [`Bf16LinearInFloat32`] on a CPU without bfloat16 instructions, 2-4x
    faster there; elsewhere it is `nn.Linear`."""

    FLOAT32_GEMM_MIN_ROWS = 64  # below, converting the weight to float32 costs more than the faster GEMM saves

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.numel() < self.FLOAT32_GEMM_MIN_ROWS * self.in_features or not emulates_bf16(x, self.weight):
            return super().forward(x)
        with torch.autocast("cpu", enabled=False):  # the casts autocast would make, differentiable
            bias = None if self.bias is None else self.bias.bfloat16()
            return Bf16LinearInFloat32.apply(x.bfloat16(), self.weight.bfloat16(), bias)


# --------------------------------------------------------------------------------------------------------------
# Padding
# --------------------------------------------------------------------------------------------------------------


MIN_GROUP_ROWS = 8  # fewer rows per attention group cost more in calls than they save in padding


def _extent(keep: torch.Tensor) -> torch.Tensor:
    """One past the last real position of each row of a (batch, seq) keep-mask; 0 for an empty row."""
    return (keep * torch.arange(1, keep.shape[1] + 1, device=keep.device)).amax(1)


def length_groups(keep: torch.Tensor, max_groups: int) -> list[torch.Tensor]:
    """Row indices of a (batch, seq) keep-mask sorted by length and cut into at most `max_groups` groups of equal size
    (of at least `MIN_GROUP_ROWS` rows); neighbouring groups of the same width are merged."""
    extent = _extent(keep)
    order = extent.argsort(stable=True)
    groups = []
    for rows in order.tensor_split(max(1, min(max_groups, len(order) // MIN_GROUP_ROWS))):
        if groups and extent[rows[-1]] == extent[groups[-1][-1]]:
            groups[-1] = torch.cat([groups[-1], rows])
        else:
            groups.append(rows)
    return groups


def _scatter_rows(x: torch.Tensor, slots: torch.Tensor, padding: torch.Tensor, total: int) -> torch.Tensor:
    """The rows of `x` at `slots` of a new (total, ...) tensor, zeros at `padding`: one pass, where zeros + index_copy
    take two."""
    return x.new_empty(total, *x.shape[1:]).index_fill_(0, padding, 0).index_copy_(0, slots, x)


class UnpaddedBatch:
    """The real tokens of a padded `(batch, seq)` batch. Training passes keep hidden states as `(tokens, d_model)` rows
    of real tokens only, so that projections, feed-forward layers, norms and dropout do no work on padding.

    Attention alone needs a padded layout. It gets one per group of rows (`row_groups`, from [`length_groups`]), each
    only as wide as its longest row, so that short sentences do not pay for the attention of the longest; tokens are
    ordered group by group. The decoder uses the encoder's `row_groups`, so that a group's queries and its keys come
    from the same sentences."""

    def __init__(self, keep: torch.Tensor, row_groups: list[torch.Tensor]):
        self.batch_size, self.seq_len = keep.shape
        self.row_groups = row_groups
        extent, columns = _extent(keep), torch.arange(self.seq_len, device=keep.device)
        self.widths, self.slots, self.padding_slots, indices = [], [], [], []
        for rows in row_groups:
            width = int(extent[rows].max())
            group_keep = keep[rows, :width].flatten()
            self.widths.append(width)
            self.slots.append(group_keep.nonzero().squeeze(1))
            self.padding_slots.append(group_keep.logical_not().nonzero().squeeze(1))
            indices.append((rows[:, None] * self.seq_len + columns[:width]).flatten()[self.slots[-1]])
        self.indices = torch.cat(indices)
        self.padding = keep.flatten().logical_not().nonzero().squeeze(1)
        self.sizes = [len(slots) for slots in self.slots]

    def unpad(self, x: torch.Tensor) -> torch.Tensor:
        """(batch, seq, ...) -> (tokens, ...)"""
        return x.flatten(0, 1).index_select(0, self.indices)

    def pad(self, x: torch.Tensor) -> torch.Tensor:
        """(tokens, ...) -> (batch, seq, ...), zeros at the padding."""
        padded = _scatter_rows(x, self.indices, self.padding, self.batch_size * self.seq_len)
        return padded.unflatten(0, (self.batch_size, self.seq_len))

    def pad_groups(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """(tokens, ...) -> one (rows, width, ...) tensor per group, zeros at the padding."""
        return PadGroups.apply(x, self)

    def unpad_groups(self, groups: tuple[torch.Tensor, ...]) -> torch.Tensor:
        """One (rows, width, ...) tensor per group -> (tokens, ...)."""
        return UnpadGroups.apply(self, *groups)

    def group_rows(self, x: torch.Tensor | None, group: int) -> torch.Tensor | None:
        """A group's rows of a (batch, ...) tensor such as a mask; a leading dimension of 1 broadcasts and stays."""
        return x if x is None or x.shape[0] == 1 else x.index_select(0, self.row_groups[group])

    def _pad_groups(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        groups = zip(x.split(self.sizes), self.row_groups, self.widths, self.slots, self.padding_slots)
        return tuple(
            _scatter_rows(part, slots, padding, len(rows) * width).unflatten(0, (len(rows), width))
            for part, rows, width, slots, padding in groups
        )

    def _unpad_groups(self, groups: tuple[torch.Tensor, ...]) -> torch.Tensor:
        out = groups[0].new_empty(sum(self.sizes), *groups[0].shape[2:])
        for group, slots, part in zip(groups, self.slots, out.split(self.sizes)):
            torch.index_select(group.flatten(0, 1), 0, slots, out=part)  # straight into place: no cat afterwards
        return out


class PadGroups(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, batch: UnpaddedBatch):
        ctx.batch = batch
        return batch._pad_groups(x)

    @staticmethod
    def backward(ctx, *grads):
        return ctx.batch._unpad_groups(grads), None


class UnpadGroups(torch.autograd.Function):
    @staticmethod
    def forward(ctx, batch: UnpaddedBatch, *groups: torch.Tensor):
        ctx.batch = batch
        return batch._unpad_groups(groups)

    @staticmethod
    def backward(ctx, grad):
        return None, *ctx.batch._pad_groups(grad)


# --------------------------------------------------------------------------------------------------------------
# Attention
# --------------------------------------------------------------------------------------------------------------


def eager_attention_forward(
    module: nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float,
    dropout: float = 0.0,
    **kwargs: Unpack[TransformersKwargs],
):
    attn_weights = torch.matmul(query, key.transpose(2, 3)) * scaling
    if attention_mask is not None:
        attn_weights = attn_weights + attention_mask
    attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
    attn_weights = nn.functional.dropout(attn_weights, p=dropout, training=module.training)
    attn_output = torch.matmul(attn_weights, value).transpose(1, 2).contiguous()
    return attn_output, attn_weights


class ZhenAttention(nn.Module):
    """Multi-head attention. Self-attention projects queries, keys and values with one fused matrix (one GEMM instead
    of three); cross-attention projects queries from the decoder and fused keys/values from the encoder output, which
    are computed once per `generate` call and then read from the cache."""

    def __init__(self, config: ZhenConfig, num_heads: int, is_cross_attention=False, is_causal=False, layer_idx=None):
        super().__init__()
        self.config = config
        self.num_heads = num_heads
        self.head_dim = config.d_model // num_heads
        self.scaling = self.head_dim**-0.5
        self.dropout = config.attention_dropout
        self.is_cross_attention = is_cross_attention
        self.is_causal = is_causal
        self.layer_idx = layer_idx
        embed_dim = config.d_model
        if is_cross_attention:
            self.q_proj = ZhenLinear(embed_dim, embed_dim)
            self.kv_proj = ZhenLinear(embed_dim, 2 * embed_dim)
        else:
            self.qkv_proj = ZhenLinear(embed_dim, 3 * embed_dim)
        self.out_proj = ZhenLinear(embed_dim, embed_dim)

    def _split_heads(self, x: torch.Tensor, parts: int) -> tuple[torch.Tensor, ...]:
        """(batch, seq, parts * d_model) -> `parts` tensors of shape (batch, heads, seq, head_dim)."""
        x = x.view(*x.shape[:-1], parts, self.num_heads, self.head_dim)
        return tuple(t.transpose(1, 2) for t in x.unbind(-3))

    def forward(
        self,
        hidden_states: torch.Tensor,
        key_value_states: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        position_embeddings: tuple[torch.Tensor, torch.Tensor] | None = None,
        past_key_values: Cache | None = None,
        tokens: UnpaddedBatch | None = None,
        source_tokens: UnpaddedBatch | None = None,
        **kwargs: Unpack[TransformersKwargs],
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """`tokens` (`source_tokens`): `hidden_states` (`key_value_states`) are the real-token rows of that batch."""
        if tokens is not None:
            return self._forward_by_groups(
                hidden_states, key_value_states, attention_mask, position_embeddings, tokens, source_tokens, **kwargs
            )
        if self.is_cross_attention:
            (query,) = self._split_heads(self.q_proj(hidden_states), 1)
            key, value = self._cross_attention_kv(key_value_states, past_key_values, source_tokens)
        else:
            query, key, value = self._split_heads(self.qkv_proj(hidden_states), 3)
            if position_embeddings is not None:
                query, key = apply_rotary_pos_emb(query, key, *position_embeddings)
            if past_key_values is not None:
                cache = getattr(past_key_values, "self_attention_cache", past_key_values)
                key, value = cache.update(key, value, self.layer_idx)
        attn_output, attn_weights = self._attend(query, key, value, attention_mask, **kwargs)
        return self.out_proj(attn_output), attn_weights

    def _attend(self, query, key, value, attention_mask, **kwargs) -> tuple[torch.Tensor, torch.Tensor | None]:
        if self._emulates_bf16_attention(query):
            # SDPA's CPU backward in emulated bfloat16 takes 3-4x as long as in float32 (3.2 of a 13.9 s tiny step)
            with torch.autocast("cpu", enabled=False):
                if attention_mask is not None and attention_mask.is_floating_point():
                    attention_mask = attention_mask.float()
                attn_output, attn_weights = self._attend(
                    query.float(), key.float(), value.float(), attention_mask, **kwargs
                )
            return attn_output.to(query.dtype), attn_weights
        attention_interface: Callable = ALL_ATTENTION_FUNCTIONS.get_interface(
            self.config._attn_implementation, eager_attention_forward
        )
        attn_output, attn_weights = attention_interface(
            self,
            query,
            key,
            value,
            attention_mask,
            dropout=self.dropout if self.training else 0.0,
            scaling=self.scaling,
            **kwargs,
        )
        return attn_output.reshape(*attn_output.shape[:2], -1), attn_weights

    def _emulates_bf16_attention(self, query: torch.Tensor) -> bool:
        """Training attention in bfloat16 on a CPU without bfloat16 instructions, which then runs in float32."""
        return (
            query.dtype == torch.bfloat16
            and torch.is_grad_enabled()
            and self.config._attn_implementation == "sdpa"
            and emulates_bf16(query)
        )

    def _forward_by_groups(
        self, hidden_states, key_value_states, attention_mask, position_embeddings, tokens, source_tokens, **kwargs
    ):
        """Attention over real-token rows, one group of similar-length sentences at a time (see [`UnpaddedBatch`])."""
        if self.is_cross_attention:
            queries, key_batch = tokens.pad_groups(self.q_proj(hidden_states)), source_tokens
            keys_values = source_tokens.pad_groups(self.kv_proj(key_value_states))
        else:
            queries, key_batch = tokens.pad_groups(self.qkv_proj(hidden_states)), tokens
        outputs = []
        for group, projected in enumerate(queries):
            width, key_width = tokens.widths[group], key_batch.widths[group]
            if width == 0:  # no real token in these rows
                outputs.append(projected.new_empty(*projected.shape[:2], self.config.d_model))
                continue
            if self.is_cross_attention:
                (query,), (key, value) = self._split_heads(projected, 1), self._split_heads(keys_values[group], 2)
            else:
                query, key, value = self._split_heads(projected, 3)
                if position_embeddings is not None:
                    cos, sin = (tokens.group_rows(table, group)[:, :width] for table in position_embeddings)
                    query, key = apply_rotary_pos_emb(query, key, cos, sin)
            mask = tokens.group_rows(attention_mask, group)
            if mask is not None:
                mask = mask[..., :width, :key_width]
            outputs.append(self._attend(query, key, value, mask, **kwargs)[0])
        return self.out_proj(tokens.unpad_groups(tuple(outputs))), None

    def _cross_attention_kv(self, encoder_hidden_states, past_key_values, source_tokens=None):
        if past_key_values is not None and past_key_values.is_updated.get(self.layer_idx):
            layer = past_key_values.cross_attention_cache.layers[self.layer_idx]
            return layer.keys, layer.values
        key_value = self.kv_proj(encoder_hidden_states)
        key, value = self._split_heads(key_value if source_tokens is None else source_tokens.pad(key_value), 2)
        if past_key_values is not None:
            key, value = past_key_values.cross_attention_cache.update(key, value, self.layer_idx)
            past_key_values.is_updated[self.layer_idx] = True
        return key, value


# --------------------------------------------------------------------------------------------------------------
# Layers
# --------------------------------------------------------------------------------------------------------------


class ZhenFeedForward(nn.Module):
    def __init__(self, config: ZhenConfig, ffn_dim: int):
        super().__init__()
        self.fc1 = ZhenLinear(config.d_model, ffn_dim)
        self.fc2 = ZhenLinear(ffn_dim, config.d_model)
        self.activation_fn = ACT2FN[config.activation_function]
        self.relu = config.activation_function == "relu"
        self.activation_dropout = config.activation_dropout

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        hidden_states = self.fc1(hidden_states)
        # in place where it can be: the product is not needed again, and a fresh tensor costs fresh pages
        hidden_states = hidden_states.relu_() if self.relu else self.activation_fn(hidden_states)
        hidden_states = dropout(hidden_states, self.activation_dropout, self.training)
        return self.fc2(hidden_states)


class ZhenLayer(GradientCheckpointingLayer):
    """Residual wiring shared by encoder and decoder layers: pre-norm `x + f(norm(x))` or post-norm `norm(x + f(x))`."""

    def __init__(self, config: ZhenConfig):
        super().__init__()
        self.normalize_before = config.normalize_before
        self.dropout = config.dropout

    def residual(self, norm: nn.LayerNorm, sublayer: Callable, hidden_states: torch.Tensor) -> torch.Tensor:
        out = sublayer(norm(hidden_states) if self.normalize_before else hidden_states)
        out = dropout(out, self.dropout, self.training, residual=hidden_states)
        return out if self.normalize_before else norm(out)


class ZhenEncoderLayer(ZhenLayer):
    def __init__(self, config: ZhenConfig, layer_idx: int | None = None):
        super().__init__(config)
        self.self_attn = ZhenAttention(config, config.encoder_attention_heads, layer_idx=layer_idx)
        self.self_attn_layer_norm = nn.LayerNorm(config.d_model)
        self.mlp = ZhenFeedForward(config, config.encoder_ffn_dim)
        self.final_layer_norm = nn.LayerNorm(config.d_model)

    def forward(
        self,
        hidden_states: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        position_embeddings: tuple[torch.Tensor, torch.Tensor] | None = None,
        tokens: UnpaddedBatch | None = None,
        **kwargs: Unpack[TransformersKwargs],
    ) -> torch.Tensor:
        def self_attention(x):
            return self.self_attn(
                x, attention_mask=attention_mask, position_embeddings=position_embeddings, tokens=tokens, **kwargs
            )[0]

        hidden_states = self.residual(self.self_attn_layer_norm, self_attention, hidden_states)
        hidden_states = self.residual(self.final_layer_norm, self.mlp, hidden_states)
        if hidden_states.dtype == torch.float16 and not self.normalize_before:
            # Post-norm fp16 activations can overflow; clamp as BART and Marian do.
            clamp_value = torch.finfo(hidden_states.dtype).max - 1000
            hidden_states = torch.clamp(hidden_states, min=-clamp_value, max=clamp_value)
        return hidden_states


class ZhenDecoderLayer(ZhenLayer):
    def __init__(self, config: ZhenConfig, layer_idx: int | None = None):
        super().__init__(config)
        heads = config.decoder_attention_heads
        self.self_attn = ZhenAttention(config, heads, is_causal=True, layer_idx=layer_idx)
        self.self_attn_layer_norm = nn.LayerNorm(config.d_model)
        self.encoder_attn = ZhenAttention(config, heads, is_cross_attention=True, layer_idx=layer_idx)
        self.encoder_attn_layer_norm = nn.LayerNorm(config.d_model)
        self.mlp = ZhenFeedForward(config, config.decoder_ffn_dim)
        self.final_layer_norm = nn.LayerNorm(config.d_model)

    def forward(
        self,
        hidden_states: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        encoder_hidden_states: torch.Tensor | None = None,
        encoder_attention_mask: torch.Tensor | None = None,
        position_embeddings: tuple[torch.Tensor, torch.Tensor] | None = None,
        past_key_values: Cache | None = None,
        use_cache: bool | None = True,
        tokens: UnpaddedBatch | None = None,
        source_tokens: UnpaddedBatch | None = None,
        **kwargs: Unpack[TransformersKwargs],
    ) -> torch.Tensor:
        def self_attention(x):
            return self.self_attn(
                x,
                attention_mask=attention_mask,
                position_embeddings=position_embeddings,
                past_key_values=past_key_values,
                tokens=tokens,
                **kwargs,
            )[0]

        def cross_attention(x):
            return self.encoder_attn(
                x,
                key_value_states=encoder_hidden_states,
                attention_mask=encoder_attention_mask,
                past_key_values=past_key_values,
                tokens=tokens,
                source_tokens=source_tokens,
                **kwargs,
            )[0]

        hidden_states = self.residual(self.self_attn_layer_norm, self_attention, hidden_states)
        hidden_states = self.residual(self.encoder_attn_layer_norm, cross_attention, hidden_states)
        return self.residual(self.final_layer_norm, self.mlp, hidden_states)


# --------------------------------------------------------------------------------------------------------------
# Stacks
# --------------------------------------------------------------------------------------------------------------


class ZhenPreTrainedModel(PreTrainedModel):
    config: ZhenConfig
    base_model_prefix = "model"
    supports_gradient_checkpointing = True
    _no_split_modules = ["ZhenEncoderLayer", "ZhenDecoderLayer"]
    _skip_keys_device_placement = ["past_key_values"]
    _supports_sdpa = True
    _supports_flash_attn = True
    _supports_flex_attn = True
    _supports_attention_backend = True
    _can_compile_fullgraph = True
    # Training passes run the token-wise work on real tokens only (see `UnpaddedBatch`): same loss and gradients, less
    # work. `ZhenPreTrainedModel.skip_padding = False` keeps the padded layout (e.g. for torch.compile, which would
    # otherwise see a new shape every batch).
    skip_padding: bool = True
    # and attention then runs on up to this many groups of sentences of similar length, each padded only to its longest
    attention_groups: int = 4

    @torch.no_grad()
    def _init_weights(self, module: nn.Module):
        super()._init_weights(module)
        if isinstance(module, ZhenSinusoidalPositionalEmbedding):
            init.copy_(module.weight, module.create_weight())
        elif isinstance(module, ZhenRotaryEmbedding):
            init.copy_(module.inv_freq, module.compute_inv_freq())

    def save_pretrained(self, save_directory, *args, **kwargs):
        self.config.auto_map = {**AUTO_MAP, **(getattr(self.config, "auto_map", None) or {})}
        return super().save_pretrained(save_directory, *args, **kwargs)

    def _resize_token_embeddings(self, new_num_tokens, pad_to_multiple_of=None, mean_resizing=True):
        embeddings = super()._resize_token_embeddings(new_num_tokens, pad_to_multiple_of, mean_resizing)
        decoder = self.get_decoder()
        if decoder.embed_tokens.weight.shape[0] != embeddings.weight.shape[0]:  # untied decoder input embeddings
            decoder.embed_tokens = self._get_resized_embeddings(
                decoder.embed_tokens, embeddings.weight.shape[0], mean_resizing=mean_resizing
            )
        return embeddings


class ZhenStack(ZhenPreTrainedModel):
    """What encoder and decoder share: token embeddings, positions, a stack of layers, and the final LayerNorm that a
    pre-norm stack needs."""

    def __init__(self, config: ZhenConfig, layer_class: type, num_layers: int, num_heads: int):
        super().__init__(config)
        self.dropout = config.dropout
        self.embed_scale = math.sqrt(config.d_model) if config.scale_embedding else 1.0
        self.embed_tokens = nn.Embedding(config.vocab_size, config.d_model, config.pad_token_id)
        self.position_embedding_type = config.position_embedding_type
        if config.position_embedding_type == "sinusoidal":
            self.embed_positions = ZhenSinusoidalPositionalEmbedding(config.max_position_embeddings, config.d_model)
        elif config.position_embedding_type == "learned":
            self.embed_positions = nn.Embedding(config.max_position_embeddings, config.d_model)
        else:
            self.rotary_emb = ZhenRotaryEmbedding(config.d_model // num_heads, config.rope_parameters["rope_theta"])
        self.layers = nn.ModuleList([layer_class(config, layer_idx=i) for i in range(num_layers)])
        self.layer_norm = nn.LayerNorm(config.d_model) if config.normalize_before else nn.Identity()
        self.gradient_checkpointing = False
        self.post_init()

    def embed(self, input_ids, inputs_embeds, position_ids, seq_end: int):
        """Token embeddings plus absolute positions, or token embeddings and the rotary (cos, sin) for attention.
        `seq_end` is one past the largest position, checked against the table so that long inputs fail clearly."""
        if (input_ids is None) == (inputs_embeds is None):
            raise ValueError("Pass exactly one of `input_ids` and `inputs_embeds`.")
        if inputs_embeds is None:
            inputs_embeds = self.embed_tokens(input_ids)
        hidden_states = inputs_embeds * self.embed_scale
        position_embeddings = None
        if self.position_embedding_type == "rope":
            position_embeddings = self.rotary_emb(hidden_states, position_ids)
        else:
            if seq_end > self.config.max_position_embeddings:
                raise ValueError(
                    f"Sequence of {seq_end} positions is longer than max_position_embeddings="
                    f"{self.config.max_position_embeddings} of this {self.position_embedding_type} position table. "
                    "Truncate the input (e.g. tokenizer(..., truncation=True, max_length=...)), limit generation "
                    "length, or use a model with position_embedding_type='rope'."
                )
            hidden_states = hidden_states + self.embed_positions(position_ids).to(hidden_states.dtype)
        hidden_states = dropout(hidden_states, self.dropout, self.training)
        return hidden_states, position_embeddings

    def unpadded_batch(self, attention_mask, kwargs: dict, source_mask=None) -> UnpaddedBatch | None:
        """The real tokens to which a training pass can restrict its token-wise work, or None to keep the padded layout:
        outside training, with nothing padded, or when per-layer outputs are recorded (they keep the padded layout).
        Rows are grouped for attention by the lengths in `source_mask` (the encoder's), or else in `attention_mask`."""
        if attention_mask is None or attention_mask.dim() != 2 or not (self.training and self.skip_padding):
            return None
        if any(kwargs.get(key, getattr(self.config, key)) for key in ("output_hidden_states", "output_attentions")):
            return None
        keep = attention_mask.bool()
        if keep.all():
            return None
        grouped_by = keep if source_mask is None or source_mask.dim() != 2 else source_mask.bool()
        return UnpaddedBatch(keep, length_groups(grouped_by, self.attention_groups))


class ZhenEncoder(ZhenStack):
    """Stack of [`ZhenEncoderLayer`]s over the source tokens."""

    _can_record_outputs = {
        "hidden_states": ZhenEncoderLayer,
        "attentions": OutputRecorder(ZhenAttention, index=1, layer_name="self_attn"),
    }

    def __init__(self, config: ZhenConfig):
        super().__init__(config, ZhenEncoderLayer, config.encoder_layers, config.encoder_attention_heads)

    @merge_with_config_defaults
    @capture_outputs
    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        **kwargs: Unpack[TransformersKwargs],
    ) -> BaseModelOutput:
        r"""
        input_ids (`torch.LongTensor` of shape `(batch_size, sequence_length)`):
            Source token ids, `[lang code] tokens </s>` as [`ZhenTokenizerFast`] makes them.
        attention_mask (`torch.Tensor` of shape `(batch_size, sequence_length)`, *optional*):
            1 for real tokens, 0 for padding. Positions count real tokens only, so left and right padding give the
            same result.
        """
        seq_len = (input_ids if input_ids is not None else inputs_embeds).shape[1]
        device = (input_ids if input_ids is not None else inputs_embeds).device
        if attention_mask is not None:
            position_ids = (attention_mask.long().cumsum(-1) - 1).clamp(min=0)
        else:
            position_ids = torch.arange(seq_len, device=device)[None]
        hidden_states, position_embeddings = self.embed(input_ids, inputs_embeds, position_ids, seq_end=seq_len)
        mask = create_bidirectional_mask(config=self.config, inputs_embeds=hidden_states, attention_mask=attention_mask)
        tokens = self.unpadded_batch(attention_mask, kwargs)
        if tokens is not None:
            hidden_states = tokens.unpad(hidden_states)
        for layer in self.layers:
            hidden_states = layer(hidden_states, mask, position_embeddings, tokens=tokens, **kwargs)
        hidden_states = self.layer_norm(hidden_states)
        return BaseModelOutput(last_hidden_state=hidden_states if tokens is None else tokens.pad(hidden_states))


class ZhenDecoder(ZhenStack):
    """Stack of [`ZhenDecoderLayer`]s: causal self-attention over the target, cross-attention over the source."""

    _can_record_outputs = {
        "hidden_states": ZhenDecoderLayer,
        "attentions": OutputRecorder(ZhenAttention, index=1, layer_name="self_attn"),
        "cross_attentions": OutputRecorder(ZhenAttention, index=1, layer_name="encoder_attn"),
    }

    def __init__(self, config: ZhenConfig):
        super().__init__(config, ZhenDecoderLayer, config.decoder_layers, config.decoder_attention_heads)

    @staticmethod
    def source_keep(encoder_attention_mask, encoder_hidden_states) -> torch.Tensor:
        """The encoder's (batch, seq) keep-mask, all true where it came without one (or with a 4D one)."""
        if encoder_attention_mask is not None and encoder_attention_mask.dim() == 2:
            return encoder_attention_mask.bool()
        return torch.ones(encoder_hidden_states.shape[:2], dtype=torch.bool, device=encoder_hidden_states.device)

    @merge_with_config_defaults
    @capture_outputs
    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        encoder_hidden_states: torch.Tensor | None = None,
        encoder_attention_mask: torch.Tensor | None = None,
        past_key_values: Cache | None = None,
        inputs_embeds: torch.Tensor | None = None,
        use_cache: bool | None = None,
        **kwargs: Unpack[TransformersKwargs],
    ) -> BaseModelOutputWithPastAndCrossAttentions:
        r"""
        input_ids (`torch.LongTensor` of shape `(batch_size, target_sequence_length)`):
            Decoder input ids: `<s>`, the target language code, then the target so far.
        encoder_hidden_states (`torch.Tensor` of shape `(batch_size, sequence_length, d_model)`):
            Output of the encoder, attended to by every layer's cross-attention.
        encoder_attention_mask (`torch.Tensor` of shape `(batch_size, sequence_length)`, *optional*):
            Source padding mask.
        past_key_values (`EncoderDecoderCache`, *optional*):
            Self-attention keys/values of earlier steps and the cross-attention keys/values of the source.
        """
        if use_cache and past_key_values is None:
            past_key_values = EncoderDecoderCache(DynamicCache(config=self.config), DynamicCache(config=self.config))
        seq_len = (input_ids if input_ids is not None else inputs_embeds).shape[1]
        device = (input_ids if input_ids is not None else inputs_embeds).device
        past_length = past_key_values.get_seq_length() if past_key_values is not None else 0
        position_ids = torch.arange(past_length, past_length + seq_len, device=device)[None]
        hidden_states, position_embeddings = self.embed(
            input_ids, inputs_embeds, position_ids, seq_end=past_length + seq_len
        )
        tokens = source_tokens = None
        if past_key_values is None:
            tokens = self.unpadded_batch(attention_mask, kwargs, source_mask=encoder_attention_mask)
            if tokens is None:
                source_tokens = self.unpadded_batch(encoder_attention_mask, kwargs)
            else:  # the same sentences in each group on both sides of cross-attention
                source_tokens = UnpaddedBatch(
                    self.source_keep(encoder_attention_mask, encoder_hidden_states), tokens.row_groups
                )
        if tokens is not None and not attention_mask[:, 1:].gt(attention_mask[:, :-1]).any():
            attention_mask = None  # right padding, whose rows are dropped: the causal mask alone (SDPA's fast path)
        self_attention_cache = getattr(past_key_values, "self_attention_cache", past_key_values)
        causal_mask = create_causal_mask(
            config=self.config,
            inputs_embeds=hidden_states,
            attention_mask=attention_mask,
            past_key_values=self_attention_cache,
            position_ids=position_ids,
        )
        encoder_attention_mask = create_bidirectional_mask(
            config=self.config,
            inputs_embeds=hidden_states,
            attention_mask=encoder_attention_mask,
            encoder_hidden_states=encoder_hidden_states,
        )
        if tokens is not None:
            hidden_states = tokens.unpad(hidden_states)
        if source_tokens is not None:
            encoder_hidden_states = source_tokens.unpad(encoder_hidden_states)
        for layer in self.layers:
            hidden_states = layer(
                hidden_states,
                causal_mask,
                encoder_hidden_states,  # positional, so that gradient checkpointing sees it
                encoder_attention_mask=encoder_attention_mask,
                position_embeddings=position_embeddings,
                past_key_values=past_key_values,
                use_cache=use_cache,
                tokens=tokens,
                source_tokens=source_tokens,
                **kwargs,
            )
        hidden_states = self.layer_norm(hidden_states)
        return BaseModelOutputWithPastAndCrossAttentions(
            last_hidden_state=hidden_states if tokens is None else tokens.pad(hidden_states),
            past_key_values=past_key_values,
        )


# --------------------------------------------------------------------------------------------------------------
# Loss
# --------------------------------------------------------------------------------------------------------------


class ChunkedLinearCrossEntropy(torch.autograd.Function):
    """Label-smoothed cross-entropy of `hidden @ weight.T`, summed over the rows whose label is not -100, computed a
    chunk of rows at a time with the gradient formed in the same pass (as Liger's fused linear cross-entropy does).

    The (tokens, vocab) logits, their log-softmax and its gradient, which with a 32k vocabulary are each half a
    gigabyte per 4k-token batch, never exist at once, and padded rows are skipped before the LM head. Under autocast
    the products run in the autocast dtype and the softmax in float32, as `lm_head` + `cross_entropy` would; in
    bfloat16 on a CPU without bf16 instructions, the products of the bf16-rounded operands run in float32 and are not
    rounded again (4x faster there, and no less precise).
    """

    @staticmethod
    def forward(ctx, hidden, weight, labels, label_smoothing: float, chunk_size: int):
        rows = (labels != -100).nonzero().squeeze(1)
        device_type = hidden.device.type
        dtype = torch.get_autocast_dtype(device_type) if torch.is_autocast_enabled(device_type) else hidden.dtype
        with torch.autocast(device_type, enabled=False):
            inputs, targets, w = hidden[rows].to(dtype), labels[rows], weight.to(dtype)
            if dtype == torch.bfloat16 and emulates_bf16(inputs):  # see Bf16LinearInFloat32
                inputs, w, dtype = inputs.float(), w.float(), torch.float32
            n, vocab_size = len(rows), w.shape[0]
            weight_sum = w.float().sum(0)
            grad_inputs = torch.empty_like(inputs)
            # written by the first chunk's product rather than zero-filled first: a 64 MiB pass less at 32k x 512
            grad_weight = (torch.empty_like if n else torch.zeros_like)(weight, dtype=torch.float32)
            buffer = inputs.new_empty((min(chunk_size, n), vocab_size), dtype=torch.float32)  # one chunk's logits
            fp32 = dtype == torch.float32
            loss = torch.zeros((), dtype=torch.float32, device=hidden.device)
            for start in range(0, n, chunk_size):
                x, y = inputs[start : start + chunk_size], targets[start : start + chunk_size]
                logits = torch.mm(x, w.t(), out=buffer[: len(x)]) if fp32 else buffer[: len(x)].copy_(x @ w.t())
                target_logits = logits.gather(1, y[:, None]).squeeze(1)
                log_probs = torch.log_softmax(logits, 1, out=logits)
                # smoothed -log p(y) = -(1-e) log p(y) - e mean(log p) = -log p(y) + e (z_y - mean z)
                loss -= log_probs.gather(1, y[:, None]).sum()
                loss += label_smoothing * (target_logits - x.float() @ weight_sum / vocab_size).sum()
                probs, grad_rows = log_probs.exp_().to(dtype), grad_inputs[start : start + chunk_size]
                if fp32:  # straight into the outputs: no (tokens, vocab) temporaries to allocate and page in
                    torch.mm(probs, w, out=grad_rows)
                    grad_weight.addmm_(probs.t(), x, beta=1 if start else 0)  # beta=0 ignores the empty memory
                else:
                    grad_rows.copy_(probs @ w)
                    (grad_weight.add_ if start else grad_weight.copy_)(probs.t() @ x)
            # the rest of d loss / d logits = softmax - e/V - (1-e) onehot(y), applied without a (tokens, vocab) pass
            smooth = label_smoothing / vocab_size
            grad_inputs -= (smooth * weight_sum + (1 - label_smoothing) * w[targets].float()).to(dtype)
            grad_weight -= smooth * inputs.float().sum(0)
            grad_weight.index_add_(0, targets, inputs.float(), alpha=-(1 - label_smoothing))
        ctx.save_for_backward(rows, grad_inputs, grad_weight)
        ctx.hidden_shape, ctx.hidden_dtype, ctx.weight_dtype = hidden.shape, hidden.dtype, weight.dtype
        ctx.used = False
        return loss

    @staticmethod
    def backward(ctx, grad_output):
        if ctx.used:
            raise RuntimeError(
                "The fused loss (ZhenForConditionalGeneration.loss_chunk_size) scales its precomputed gradients in "
                "place, so it cannot be backpropagated twice (retain_graph=True); set model.loss_chunk_size = None."
            )
        ctx.used = True
        rows, grad_inputs, grad_weight = ctx.saved_tensors
        grad_hidden = grad_inputs.new_zeros(ctx.hidden_shape, dtype=ctx.hidden_dtype)
        grad_hidden[rows] = (grad_inputs * grad_output).to(ctx.hidden_dtype)
        # in place: a second (vocab, d_model) gradient would cost a pass and, at 32k x 512, 64 MiB of fresh pages
        return grad_hidden, grad_weight.mul_(grad_output).to(ctx.weight_dtype), None, None, None


def labelled_prefix_mask(labels: torch.Tensor) -> torch.Tensor:
    """1 up to and including each row's last labelled (not -100) position, 0 after it."""
    positions = torch.arange(1, labels.shape[1] + 1, device=labels.device)
    return (positions <= (positions * (labels != -100)).amax(1, keepdim=True)).long()


def per_token(loss_sum: torch.Tensor, labels: torch.Tensor, num_items_in_batch=None) -> torch.Tensor:
    """A summed token loss divided by the number of labelled tokens, or by `num_items_in_batch` when given."""
    if num_items_in_batch is None:
        num_items_in_batch = (labels != -100).sum().clamp(min=1)
    if torch.is_tensor(num_items_in_batch):
        num_items_in_batch = num_items_in_batch.to(loss_sum.device)
    return loss_sum / num_items_in_batch


# --------------------------------------------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------------------------------------------


class ZhenModel(ZhenPreTrainedModel):
    """The bare zhen encoder-decoder, returning the decoder's last hidden states (no LM head)."""

    # With `tie_word_embeddings=False` Transformers ignores this map and every embedding keeps its own weight.
    _tied_weights_keys = {"decoder.embed_tokens.weight": "encoder.embed_tokens.weight"}

    def __init__(self, config: ZhenConfig):
        super().__init__(config)
        self.encoder = ZhenEncoder(config)
        self.decoder = ZhenDecoder(config)
        self.post_init()

    def get_input_embeddings(self) -> nn.Embedding:
        return self.encoder.embed_tokens

    def set_input_embeddings(self, value: nn.Embedding):
        self.encoder.embed_tokens = value
        if self.config.tie_word_embeddings:
            self.decoder.embed_tokens = value

    def get_encoder(self):
        return self.encoder

    def get_decoder(self):
        return self.decoder

    def shares_one_lookup(self, input_ids, decoder_input_ids, inputs_embeds, decoder_inputs_embeds) -> bool:
        """Whether a training pass can embed source and target with one lookup of their shared table."""
        return (
            self.training
            and torch.is_grad_enabled()
            and input_ids is not None
            and decoder_input_ids is not None
            and inputs_embeds is None
            and decoder_inputs_embeds is None
            and self.encoder.embed_tokens.weight is self.decoder.embed_tokens.weight
        )

    def embed_source_and_target(self, input_ids, decoder_input_ids) -> tuple[torch.Tensor, torch.Tensor]:
        """Both token embeddings from one lookup, whose backward forms one dense (vocab, d_model) gradient where two
        lookups form two and add them: at 32k x 512 on CPU, 64 MiB of fresh pages and a pass fewer per step. (Hooks on
        the decoder's `embed_tokens` module then see no call: the table is the encoder's.)"""
        ids = torch.cat([input_ids.flatten(), decoder_input_ids.flatten()])
        source, target = self.encoder.embed_tokens(ids).split([input_ids.numel(), decoder_input_ids.numel()])
        return source.view(*input_ids.shape, -1), target.view(*decoder_input_ids.shape, -1)

    @can_return_tuple
    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        decoder_input_ids: torch.LongTensor | None = None,
        decoder_attention_mask: torch.Tensor | None = None,
        encoder_outputs: tuple[torch.Tensor] | BaseModelOutput | None = None,
        past_key_values: Cache | None = None,
        inputs_embeds: torch.Tensor | None = None,
        decoder_inputs_embeds: torch.Tensor | None = None,
        use_cache: bool | None = None,
        **kwargs: Unpack[TransformersKwargs],
    ) -> Seq2SeqModelOutput:
        r"""
        input_ids (`torch.LongTensor` of shape `(batch_size, sequence_length)`):
            Source token ids from [`ZhenTokenizerFast`]: `[src lang code] tokens </s>`.
        decoder_input_ids (`torch.LongTensor` of shape `(batch_size, target_sequence_length)`, *optional*):
            `<s> [tgt lang code] tokens`; built from `labels` by [`ZhenForConditionalGeneration`] when omitted.
        decoder_attention_mask (`torch.Tensor` of shape `(batch_size, target_sequence_length)`, *optional*):
            Target padding mask, combined with the causal mask.
        encoder_outputs (`BaseModelOutput` or `tuple`, *optional*):
            Precomputed encoder output; the encoder is skipped when given.

        Example:

        ```python
        >>> import torch
        >>> from zhen import ZhenConfig, ZhenModel
        >>> model = ZhenModel(ZhenConfig.from_preset("tiny", vocab_size=100))
        >>> out = model(input_ids=torch.tensor([[4, 10, 11, 2]]), decoder_input_ids=torch.tensor([[1, 5, 12]]))
        >>> list(out.last_hidden_state.shape)
        [1, 3, 64]
        ```
        """
        if encoder_outputs is None and self.shares_one_lookup(
            input_ids, decoder_input_ids, inputs_embeds, decoder_inputs_embeds
        ):
            inputs_embeds, decoder_inputs_embeds = self.embed_source_and_target(input_ids, decoder_input_ids)
            input_ids = decoder_input_ids = None
        if encoder_outputs is None:
            encoder_outputs = self.encoder(
                input_ids=input_ids, attention_mask=attention_mask, inputs_embeds=inputs_embeds, **kwargs
            )
        elif not isinstance(encoder_outputs, BaseModelOutput):
            encoder_outputs = BaseModelOutput(
                last_hidden_state=encoder_outputs[0],
                hidden_states=encoder_outputs[1] if len(encoder_outputs) > 1 else None,
                attentions=encoder_outputs[2] if len(encoder_outputs) > 2 else None,
            )
        decoder_outputs = self.decoder(
            input_ids=decoder_input_ids,
            attention_mask=decoder_attention_mask,
            encoder_hidden_states=encoder_outputs.last_hidden_state,
            encoder_attention_mask=attention_mask,
            past_key_values=past_key_values,
            inputs_embeds=decoder_inputs_embeds,
            use_cache=use_cache,
            **kwargs,
        )
        return Seq2SeqModelOutput(
            last_hidden_state=decoder_outputs.last_hidden_state,
            past_key_values=decoder_outputs.past_key_values,
            decoder_hidden_states=decoder_outputs.hidden_states,
            decoder_attentions=decoder_outputs.attentions,
            cross_attentions=decoder_outputs.cross_attentions,
            encoder_last_hidden_state=encoder_outputs.last_hidden_state,
            encoder_hidden_states=encoder_outputs.hidden_states,
            encoder_attentions=encoder_outputs.attentions,
        )


class ZhenForConditionalGeneration(ZhenPreTrainedModel, GenerationMixin):
    """zhen encoder-decoder with a language-modelling head, for translation with `generate()`.

    The target language is chosen by forcing its code as the first generated token:
    `model.generate(**inputs, forced_bos_token_id=tokenizer.convert_tokens_to_ids("__zh__"))`, or simply
    `zhen.translate(...)`, which does it for you.

    Setting `model.loss_chunk_size` (e.g. 512 tokens) makes training forward passes with `labels` compute the loss
    with [`ChunkedLinearCrossEntropy`]: the same loss and gradients without the full logits (about 1 GB less memory
    per 4k-token batch with a 32k vocabulary, and faster where the LM head is a large share of the work), so the
    output has `logits=None`. Evaluation and gradient-free passes are unaffected.
    """

    _tied_weights_keys = {"lm_head.weight": "model.encoder.embed_tokens.weight"}
    loss_chunk_size: int | None = None

    def __init__(self, config: ZhenConfig):
        super().__init__(config)
        self.model = ZhenModel(config)
        self.lm_head = ZhenLinear(config.d_model, config.vocab_size, bias=False)
        self.post_init()

    def get_encoder(self):
        return self.model.encoder

    def get_decoder(self):
        return self.model.decoder

    @can_return_tuple
    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        decoder_input_ids: torch.LongTensor | None = None,
        decoder_attention_mask: torch.Tensor | None = None,
        encoder_outputs: tuple[torch.Tensor] | BaseModelOutput | None = None,
        past_key_values: Cache | None = None,
        inputs_embeds: torch.Tensor | None = None,
        decoder_inputs_embeds: torch.Tensor | None = None,
        labels: torch.LongTensor | None = None,
        use_cache: bool | None = None,
        **kwargs: Unpack[TransformersKwargs],
    ) -> Seq2SeqLMOutput:
        r"""
        decoder_input_ids (`torch.LongTensor` of shape `(batch_size, target_sequence_length)`, *optional*):
            `<s> [tgt lang code] tokens`; built from `labels` when omitted.
        decoder_attention_mask (`torch.Tensor` of shape `(batch_size, target_sequence_length)`, *optional*):
            Target padding mask, combined with the causal mask.
        encoder_outputs (`BaseModelOutput` or `tuple`, *optional*):
            Precomputed encoder output; the encoder is skipped when given.
        labels (`torch.LongTensor` of shape `(batch_size, target_sequence_length)`, *optional*):
            Target ids `[tgt lang code] tokens </s>`, with `-100` where no loss is wanted (padding). The loss is the
            cross-entropy with `config.label_smoothing`, summed over labelled tokens and divided by their number, or
            by `num_items_in_batch` when Trainer passes it under gradient accumulation.

        Example:

        ```python
        >>> import torch
        >>> from zhen import ZhenConfig, ZhenForConditionalGeneration
        >>> model = ZhenForConditionalGeneration(ZhenConfig.from_preset("tiny", vocab_size=100))
        >>> out = model(input_ids=torch.tensor([[4, 10, 11, 2]]), labels=torch.tensor([[5, 12, 13, 2]]))
        >>> out.loss.shape, list(out.logits.shape)
        (torch.Size([]), [1, 4, 100])
        ```
        """
        if labels is not None:
            use_cache = False
            if decoder_input_ids is None and decoder_inputs_embeds is None:
                decoder_input_ids = self.prepare_decoder_input_ids_from_labels(labels)
            if decoder_attention_mask is None and self.training and self.skip_padding:
                # Positions after a row's last label feed no loss and, being later, no earlier position: padding.
                decoder_attention_mask = labelled_prefix_mask(labels)
        num_items_in_batch = kwargs.pop("num_items_in_batch", None)
        outputs: Seq2SeqModelOutput = self.model(
            input_ids,
            attention_mask=attention_mask,
            decoder_input_ids=decoder_input_ids,
            decoder_attention_mask=decoder_attention_mask,
            encoder_outputs=encoder_outputs,
            past_key_values=past_key_values,
            inputs_embeds=inputs_embeds,
            decoder_inputs_embeds=decoder_inputs_embeds,
            use_cache=use_cache,
            **kwargs,
        )
        if labels is not None and self.loss_chunk_size and self.training and torch.is_grad_enabled():
            logits, loss = None, self.chunked_translation_loss(outputs.last_hidden_state, labels, num_items_in_batch)
        else:
            logits = self.lm_head(outputs.last_hidden_state)
            loss = self.translation_loss(logits, labels, num_items_in_batch) if labels is not None else None
        return Seq2SeqLMOutput(
            loss=loss,
            logits=logits,
            past_key_values=outputs.past_key_values,
            decoder_hidden_states=outputs.decoder_hidden_states,
            decoder_attentions=outputs.decoder_attentions,
            cross_attentions=outputs.cross_attentions,
            encoder_last_hidden_state=outputs.encoder_last_hidden_state,
            encoder_hidden_states=outputs.encoder_hidden_states,
            encoder_attentions=outputs.encoder_attentions,
        )

    def translation_loss(self, logits, labels, num_items_in_batch=None) -> torch.Tensor:
        """Label-smoothed cross-entropy, summed and divided by the number of labelled tokens. Under gradient
        accumulation Trainer passes `num_items_in_batch`, the count over all micro-batches, so that the accumulated
        gradient equals the full batch's instead of growing with the number of steps."""
        labels = labels.to(logits.device)
        loss = nn.functional.cross_entropy(
            logits.float().view(-1, logits.shape[-1]),
            labels.view(-1),
            ignore_index=-100,
            reduction="sum",
            label_smoothing=self.config.label_smoothing,
        )
        return per_token(loss, labels, num_items_in_batch)

    def chunked_translation_loss(self, hidden_states, labels, num_items_in_batch=None) -> torch.Tensor:
        """`translation_loss(lm_head(hidden_states), labels)` without materialising the logits."""
        labels = labels.to(hidden_states.device)
        loss = ChunkedLinearCrossEntropy.apply(
            hidden_states.reshape(-1, hidden_states.shape[-1]),
            self.lm_head.weight,
            labels.reshape(-1),
            self.config.label_smoothing,
            self.loss_chunk_size,
        )
        return per_token(loss, labels, num_items_in_batch)

    def prepare_decoder_input_ids_from_labels(self, labels: torch.Tensor) -> torch.Tensor:
        return shift_tokens_right(labels, self.config.pad_token_id, self.config.decoder_start_token_id)


__all__ = ["ZhenPreTrainedModel", "ZhenModel", "ZhenForConditionalGeneration"]
