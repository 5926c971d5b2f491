# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""The decoder's layers for one decoding step on a CPU, as one program TorchScript can run: [`DecoderLayerSteps`];
the encoder's likewise for sentences without padding: [`EncoderSteps`].

A decoding step of a few rows at the widths people train on a CPU (`d_model` 256) costs what issuing its ~170
operations costs, and the threads of a session that decode batches at once (`FastDecoder.map`) issue them through one
Python interpreter, one at a time. [`DecoderLayerSteps`] computes what every `ZhenDecoderLayer`'s forward and the
final norm compute in a step of `zhen.decoder_steps.DecoderSteps` (eval mode, one new token per row over the
cache): the same operations in the same order, so the same numbers, with the session's weights held by products
of their kind ([`product_of`]). [`scripted`] compiles it, once per model: TorchScript's interpreter runs the whole
stack of layers in one call and without the GIL, so threads decoding at once run their steps side by side. Where
TorchScript is not available, the same module runs in Python, still without the ~20 module calls and keyword
arguments a layer's forward makes. [`EncoderSteps`] does the same for the encoder of sentences without padding (one
text a call), whose layers' forwards otherwise cost more than their products at a dozen tokens.
"""

import contextlib
import sys
import threading
import warnings
import weakref
from typing import Final

import torch
from torch import nn

from . import hardware
from .modeling_zhen import apply_rotary_pos_emb


RowIndex = tuple[torch.Tensor, torch.Tensor]  # the table rows weighted row sums read, and where each sum starts
# A packed batch's attention groups ([`attend_groups`]): `gather`, `unpad`, each group's (rows, width) and key mask.
Groups = tuple[torch.Tensor, torch.Tensor, list[tuple[int, int]], list[torch.Tensor | None]]


def rows_fit(table: torch.Tensor) -> bool:
    """Whether `weights @ table` (`(n, heads, queries, k) @ (n, heads, k, m)`) can be taken as weighted sums of the
    rows of a float32 or bf16 `table`: each `table[i, j]` is `k` rows of `m` values one after the other, the `(i, j)`
    blocks at a fixed stride (a cache's rows are followed by its unwritten ones)."""
    if table.dtype != torch.float32 and table.dtype != torch.bfloat16:
        return False
    heads, k, m = table.shape[1], table.shape[2], table.shape[3]
    block = table.stride(1)
    rows_apart = table.stride(3) == 1 and table.stride(2) == m and block % m == 0 and block >= k * m
    return rows_apart and table.stride(0) == heads * block


def multiply(weights: torch.Tensor, table: torch.Tensor, rows: RowIndex | None) -> torch.Tensor:
    """`weights @ table` in `table`'s dtype: FBGEMM's weighted sums of the rows of `table` ([`rows_fit`]) that `rows`
    index (`embedding_bag`: one streaming pass over the cache, where a batched matmul multiplies each block as a small
    matrix of a few query rows), or without `rows` a batched matmul."""
    if weights.dtype != table.dtype:
        weights = weights.to(table.dtype)
    if rows is None or not rows_fit(table):
        return torch.matmul(weights, table)
    n, heads, queries = weights.shape[0], weights.shape[1], weights.shape[2]
    m, block = table.shape[3], table.stride(1)
    flat = table.as_strided((n * heads * block // m, m), (m, 1))
    sums = torch.embedding_bag(flat, rows[0], rows[1], False, 0, False, weights.reshape(-1))[0]  # mode 0: sums
    return sums.view(n, heads, queries, m)


def attend(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, bias: torch.Tensor | None, scaling: float,
           key_rows: RowIndex | None, value_rows: RowIndex | None) -> torch.Tensor:  # fmt: skip
    """softmax(q kᵀ · scaling + bias) v of one query per row, softmax in float32 as `eager_attention_forward`, in the
    query's dtype (keys and values may be held in bf16: `zhen.fast_generation.source_dtype`). Where
    `key` has fewer rows than `query` (the source's keys, once per sentence), the `rows // batch` beams of a sentence
    attend as one block of queries. `key_rows` and `value_rows` index the rows of `keyᵀ` and `value` for
    [`multiply`]. Returns `(rows, 1, heads, head_dim)`."""
    rows, heads, dtype = query.shape[0], query.shape[1], query.dtype
    batch = key.shape[0]
    if batch != rows:  # beams of a sentence: (batch * beams, heads, 1, d) -> (batch, heads, beams, d)
        query = query.view(batch, rows // batch, heads, -1).transpose(1, 2)
    # Batched products of a few rows are several times faster on contiguous operands than on the projections' views.
    scores = multiply(query.contiguous(), key.transpose(-1, -2), key_rows)  # keys by dimension: (n, heads, d, k)
    if scores.dtype != torch.float32:
        scores = scores.float()
    scores = scores * scaling
    if bias is not None:
        scores = scores + bias
    weights = hardware.row_softmax(scores)
    if value.dtype != torch.float32:
        weights = weights.to(value.dtype)
    output = multiply(weights, value, value_rows).to(dtype)  # (n, heads, queries, d), in the query's dtype
    if batch != rows:
        return output.transpose(1, 2).reshape(rows, 1, heads, -1)
    return output.transpose(1, 2)


def attend_groups(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, scaling: float,
                  groups: Groups) -> torch.Tensor:  # fmt: skip
    """SDPA over the sentences of a packed batch, `(1, heads, tokens, head_dim)`, one group of sentences of similar
    length at a time, as `zhen.packing.packed_sdpa_attention` computes it: each group's `(sentences, heads, width,
    head_dim)` picked from the packed states by one `index_select` (`gather`), its key mask keeping the padding out,
    the outputs back in the packed order by another (`unpad`). Returns `(1, tokens, heads, head_dim)`."""
    gather, unpad, shapes, masks = groups
    heads, dim = query.shape[1], query.shape[3]
    sizes = [rows * heads * width for rows, width in shapes]
    parts = [t.squeeze(0).transpose(0, 1).contiguous().view(-1, dim).index_select(0, gather).split(sizes)
             for t in (query, key, value)]  # fmt: skip
    outputs: list[torch.Tensor] = []
    for i in range(len(shapes)):
        rows, width = shapes[i]
        q, k, v = (parts[0][i].view(rows, heads, width, dim), parts[1][i].view(rows, heads, width, dim),
                   parts[2][i].view(rows, heads, width, dim))  # fmt: skip
        output = nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=masks[i], scale=scaling)
        outputs.append(output.reshape(-1, dim))
    return torch.cat(outputs).index_select(0, unpad).view(1, -1, heads, dim)


def write_step(cache: torch.Tensor, position: int, states: torch.Tensor):
    """Write a step's keys or values `(rows, heads, 1, head_dim)` at `position` of a self-attention cache `(batch,
    heads, positions, beams, head_dim)` ([`attend_history`]), each row in its beam's slot (one row per sentence: the
    first slot)."""
    batch, heads = cache.shape[0], cache.shape[1]
    queries = states.shape[0] // batch
    cache[:, :, position, :queries] = states.reshape(batch, queries, heads, -1).transpose(1, 2)


def write_levels(cache: torch.Tensor, position: int, states: torch.Tensor, end: int) -> torch.Tensor:
    """Write each sentence's keys or values of the positions from `position` to `end` (`(sentences, heads, levels *
    width, head_dim)`: the first `width` slots of each, a slot's after another) in a self-attention cache
    `(sentences, heads, positions, slots, head_dim)`; the cache up to `end` as `(sentences, heads, end * slots,
    head_dim)`, position-major ([`zhen.decoder_steps.DecoderSteps.steps`])."""
    levels = end - position
    width = states.shape[2] // levels
    cache[:, :, position:end, :width] = states.view(states.shape[0], states.shape[1], levels, width, states.shape[3])
    return cache[:, :, :end].flatten(2, 3)


def attend_history(query: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, scaling: float,
                   columns: torch.Tensor | None, value_rows: RowIndex | None) -> torch.Tensor:  # fmt: skip
    """softmax(q kᵀ · scaling) v of one query per row over its history in a self-attention cache that holds the beams
    of a sentence side by side, `(batch, heads, positions, beams, head_dim)`: row `r`'s history at position `j` is
    in the beam slot `columns[.., j] - j * beams` (beam search moves no keys or values, only these pointers). The
    queries of a sentence multiply all its beams' keys at once, as one block, and each row's scores are picked from
    the block (`columns`: `(batch, heads, queries, positions)`; None with one slot a sentence); the values are
    weighted sums of the rows `value_rows` index ([`multiply`]) or, without, gathered and multiplied. Softmax in
    float32 as [`attend`]. Returns `(rows, 1, heads, head_dim)`."""
    batch, heads, length, beams, dim = keys.shape
    rows = query.shape[0]
    queries = rows // batch
    query = query.reshape(batch, queries, heads, dim).transpose(1, 2).contiguous()
    every = torch.matmul(query, keys.reshape(batch, heads, length * beams, dim).transpose(-1, -2))
    scores = every if columns is None else every.gather(-1, columns)  # (batch, heads, queries, positions)
    if scores.dtype != torch.float32:
        scores = scores.float()
    weights = hardware.row_softmax(scores * scaling)
    if values.dtype != torch.float32:
        weights = weights.to(values.dtype)
    if value_rows is not None:
        table = values.as_strided((batch * values.stride(0) // dim, dim), (dim, 1))
        output = torch.embedding_bag(table, value_rows[0], value_rows[1], False, 0, False, weights.reshape(-1))[0]
    else:
        history = values.reshape(batch, heads, length * beams, dim)
        if columns is not None:
            picked = columns.reshape(batch, heads, queries * length, 1).expand(batch, heads, queries * length, dim)
            history = history.gather(2, picked).view(batch, heads, queries, length, dim)
            weights = weights[:, :, :, None]
        output = torch.matmul(weights, history)
    return output.reshape(batch, heads, queries, dim).transpose(1, 2).reshape(rows, 1, heads, dim)


FEW_ROW_MACS = 1 << 21  # a float32 product this small goes to MKL (`nn.functional.linear`), not to oneDNN's packing
# A bf16 session's product by a weight of at most `BF16_SMALL_WEIGHT` elements, of at most `BF16_FEW_ROW_MACS`
# multiply-adds, multiplies the float32 weight through MKL instead: a oneDNN bf16 call and the two casts around it cost
# more than a few rows of a small float32 weight do, where a model's decoder has at most `BF16_FLOAT32_DECODER` weights
# (its float32 weights stay in the caches between steps; a larger one's are read from memory, in bf16 at half the
# bytes). Either rule holds where MKL runs its own code for the CPU (`zhen.hardware`'s `mkl_few_rows`: Intel's).
# Nine rows of the largest weight (a drafted greedy search's check of eight tokens, [`zhen.draft_decoding`]) multiply
# as one row does: the check sees the numbers the steps it stands for would.
BF16_SMALL_WEIGHT = 1 << 18
BF16_FEW_ROW_MACS = 9 * BF16_SMALL_WEIGHT
BF16_FLOAT32_DECODER = 8 << 20


def few_rows(weight: torch.Tensor, bf16: bool) -> int:
    """The most rows a product by `weight` multiplies through `nn.functional.linear` by the float32 weight as it is
    (MKL) rather than through oneDNN, in a float32 session or (`bf16`) a bf16 one."""
    return few_rows_of(weight.numel(), bf16)


def few_rows_of(elements: int, bf16: bool) -> int:
    """[`few_rows`] of a weight of `elements` values: none where `zhen.hardware`'s `mkl_few_rows` is off."""
    if hardware.current().mkl_few_rows == "off":
        return 0
    if not bf16:
        return FEW_ROW_MACS // elements
    return BF16_FEW_ROW_MACS // elements if elements <= BF16_SMALL_WEIGHT else 0


class Product(nn.Module):
    """A session linear's product, in three parts: `enter` turns the step's hidden states into the product's input,
    `multiply` multiplies (with `relu`, ReLU applied to the product), `leave` turns the output back into the hidden
    states' dtype. Two products of one kind hand the first's output straight to the second ([`FeedForward`]), but
    where the first multiplies `x` in float32 as it is ([`in_float32`])."""

    def project(self, x: torch.Tensor) -> torch.Tensor:
        return self.leave(self.multiply(self.enter(x), False), x.dtype)

    def in_float32(self, x: torch.Tensor) -> bool:
        return False

    def enter(self, x: torch.Tensor) -> torch.Tensor:
        return x

    def leave(self, y: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        return y


class PlainProduct(Product):
    """`nn.functional.linear` by a weight as it is: an `nn.Linear`'s own, or (`bf16`) a `Bf16Linear`'s bf16 copy,
    whose input is rounded to bf16 and whose output goes back to the input's dtype. Given the float32 weight and bias
    as they are (`plain`, `plain_bias`), a product of at most [`few_rows`] rows multiplies by those instead, in
    float32 (MKL), with no casts ([`in_float32`])."""

    bias: torch.Tensor | None
    bf16: Final[bool]
    few_rows: Final[int]
    plain: torch.Tensor | None
    plain_bias: torch.Tensor | None

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None, bf16: bool = False,
                 plain: torch.Tensor | None = None, plain_bias: torch.Tensor | None = None,
                 rows: int | None = None):  # fmt: skip
        super().__init__()
        self.weight, self.bias, self.bf16 = weight, bias, bf16
        self.plain, self.plain_bias = plain, plain_bias
        self.few_rows = 0 if plain is None else few_rows(plain, bf16) if rows is None else rows

    def project(self, x: torch.Tensor) -> torch.Tensor:
        plain = self.plain
        if plain is not None and x.numel() <= self.few_rows * x.size(-1):
            return nn.functional.linear(x, plain, self.plain_bias)
        return self.leave(self.multiply(self.enter(x), False), x.dtype)

    def in_float32(self, x: torch.Tensor) -> bool:
        return self.plain is not None and x.numel() <= self.few_rows * x.size(-1)

    def enter(self, x: torch.Tensor) -> torch.Tensor:
        return x.to(torch.bfloat16) if self.bf16 else x

    def multiply(self, x: torch.Tensor, relu: bool) -> torch.Tensor:
        y = nn.functional.linear(x, self.weight, self.bias)
        return y.relu() if relu else y

    def leave(self, y: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        return y.to(dtype) if self.bf16 else y


class OnednnProduct(PlainProduct):
    """A product by a weight packed into oneDNN's GEMM layout (`PackedLinear` in float32, `Bf16Linear` in bf16), ReLU
    fused into it; a product of few rows by the float32 weight as it is ([`PlainProduct`]): a oneDNN call costs
    ~15 us more than MKL's (~30 us a bf16 one), more than the product itself at a step of one sentence."""

    def multiply(self, x: torch.Tensor, relu: bool) -> torch.Tensor:
        no_scalars: list[int | float | complex | None] = []  # the op's `Scalar?[]`
        return torch.ops.mkldnn._linear_pointwise(x, self.weight, self.bias, "relu" if relu else "none", no_scalars, "")


class MklProduct(Product):
    """A float32 product by a weight packed into MKL's GEMM layout (`PackedLinear`)."""

    bias: torch.Tensor | None

    def __init__(self, packed: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None):
        super().__init__()
        self.packed, self.weight, self.bias = packed, weight, bias

    def multiply(self, x: torch.Tensor, relu: bool) -> torch.Tensor:
        y = torch.ops.mkl._mkl_linear(x, self.packed, self.weight, self.bias, x.numel() // x.size(-1))
        return y.relu_() if relu else y  # in place: the product's own output


class Int8Product(Product):
    """The int8 product of an `Int8Linear` (a dynamically quantized `Linear`'s packed weight), ReLU fused into it; its
    inputs of `many_rows_numel` entries or more multiplied by the `many_rows` packing, ReLU apart, as it does."""

    reduce_range: Final[bool]
    many_rows_numel: Final[int]

    def __init__(self, packed, reduce_range: bool, many_rows, many_rows_numel: int):
        super().__init__()
        self.packed, self.reduce_range = packed, reduce_range
        self.many_rows, self.many_rows_numel = many_rows, many_rows_numel

    def multiply(self, x: torch.Tensor, relu: bool) -> torch.Tensor:
        if not torch.jit.is_scripting():  # interpreted: the products as Python calls them cheaply
            return self.multiply_in_python(x, relu)
        if x.numel() >= self.many_rows_numel:
            y = torch.ops.quantized.linear_dynamic(x, self.many_rows, self.reduce_range)
            return y.relu_() if relu else y
        if relu:
            return torch.ops.quantized.linear_relu_dynamic(x, self.packed, self.reduce_range)
        return torch.ops.quantized.linear_dynamic(x, self.packed, self.reduce_range)

    @torch.jit.unused
    def multiply_in_python(self, x: torch.Tensor, relu: bool) -> torch.Tensor:
        if x.numel() >= self.many_rows_numel:
            y = hardware.packed_product(torch.ops.quantized.linear_dynamic, x, self.many_rows, self.reduce_range)
            return y.relu_() if relu else y
        op = torch.ops.quantized.linear_relu_dynamic if relu else torch.ops.quantized.linear_dynamic
        return hardware.packed_product(op, x, self.packed, self.reduce_range)


ACTIVATIONS = ("relu", "gelu", "silu")


class FeedForward(nn.Module):
    """`fc2(activation(fc1(x)))`. With ReLU and two products of one kind, ReLU is fused into `fc1`'s product and its
    output goes to `fc2` as it is (ReLU commutes with rounding to bf16): what `Bf16ReluMLP` and `Int8ReluMLP` do; but
    not where `fc1` multiplies `x` in float32 as it is ([`Product.in_float32`])."""

    activation: Final[str]
    fused: Final[bool]

    def __init__(self, fc1: Product, fc2: Product, activation: str, fuse_relu: bool = True):
        super().__init__()
        self.fc1, self.fc2, self.activation = fc1, fc2, activation
        same_kind = type(fc1) is type(fc2) and getattr(fc1, "bf16", False) == getattr(fc2, "bf16", False)
        self.fused = activation == "relu" and same_kind and fuse_relu

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.fused and not self.fc1.in_float32(x):
            return self.fc2.leave(self.fc2.multiply(self.fc1.multiply(self.fc1.enter(x), True), False), x.dtype)
        y = self.fc1.project(x)
        if self.activation == "relu":
            y = y.relu()
        elif self.activation == "gelu":
            y = nn.functional.gelu(y)
        else:
            y = nn.functional.silu(y)
        return self.fc2.project(y)


def split_heads(projected: torch.Tensor, parts: int, heads: int) -> torch.Tensor:
    """`(rows, 1, parts * d_model)` -> `(parts, rows, heads, 1, head_dim)`, as `ZhenAttention.split_heads`."""
    rows, length = projected.shape[0], projected.shape[1]
    return projected.view(rows, length, parts, heads, -1).permute(2, 0, 3, 1, 4)


class ResidualLayer(nn.Module):
    """What a decoder layer's and an encoder layer's steps share: the feed-forward residual branch, pre- or post-norm
    (`normalize_before`, `final_layer_norm` and `mlp` are the subclass's)."""

    def feed_forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        residual = hidden_states
        if self.normalize_before:
            hidden_states = self.final_layer_norm(hidden_states)
        hidden_states = residual + self.mlp(hidden_states)
        if not self.normalize_before:
            hidden_states = self.final_layer_norm(hidden_states)
        return hidden_states


class LayerStep(ResidualLayer):
    """One `ZhenDecoderLayer`'s forward for a step: self-attention over the cache (the step's keys and values written
    at `position`), cross-attention over the source's keys and values, feed-forward; each a residual branch, pre- or
    post-norm as the layer."""

    normalize_before: Final[bool]
    heads: Final[int]
    scaling: Final[float]

    def __init__(self, layer: nn.Module, products: dict):
        super().__init__()
        self.normalize_before = layer.normalize_before
        self.heads, self.scaling = layer.self_attn.num_heads, layer.self_attn.scaling
        self.self_attn_layer_norm = layer.self_attn_layer_norm
        self.encoder_attn_layer_norm = layer.encoder_attn_layer_norm
        self.final_layer_norm = layer.final_layer_norm
        self.qkv_proj, self.self_out_proj = products[layer.self_attn.qkv_proj], products[layer.self_attn.out_proj]
        self.q_proj, self.encoder_out_proj = products[layer.encoder_attn.q_proj], products[layer.encoder_attn.out_proj]
        self.mlp = products[layer.mlp]

    def forward(self, hidden_states: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, position: int,
                source_keys: torch.Tensor, source_values: torch.Tensor, source_bias: torch.Tensor,
                cos: torch.Tensor | None, sin: torch.Tensor | None, self_columns: torch.Tensor | None,
                self_rows: RowIndex | None, source_key_rows: RowIndex | None, source_value_rows: RowIndex | None,
                causal: torch.Tensor | None = None) -> torch.Tensor:  # fmt: skip
        residual = hidden_states
        if self.normalize_before:
            hidden_states = self.self_attn_layer_norm(hidden_states)
        projected = split_heads(self.qkv_proj.project(hidden_states), 3, self.heads)
        query, key, value = projected[0], projected[1], projected[2]
        if cos is not None and sin is not None:
            query, key = apply_rotary_pos_emb(query, key, cos, sin)
        if causal is None:
            write_step(keys, position, key)
            write_step(values, position, value)
            output = attend_history(query, keys[:, :, : position + 1], values[:, :, : position + 1], self.scaling,
                                    self_columns, self_rows)  # fmt: skip
        else:  # several positions a sentence: a check of drafted tokens or beams (`zhen.draft_decoding`)
            end = causal.shape[-1] // keys.shape[3]
            output = attend(query, write_levels(keys, position, key, end), write_levels(values, position, value, end),
                            causal, self.scaling, None, None)  # fmt: skip
        hidden_states = residual + self.self_out_proj.project(self.merge_heads(output, hidden_states))
        if not self.normalize_before:
            hidden_states = self.self_attn_layer_norm(hidden_states)

        residual = hidden_states
        if self.normalize_before:
            hidden_states = self.encoder_attn_layer_norm(hidden_states)
        query = split_heads(self.q_proj.project(hidden_states), 1, self.heads)[0]
        output = attend(query, source_keys, source_values, source_bias, self.scaling, source_key_rows,
                        source_value_rows)  # fmt: skip
        hidden_states = residual + self.encoder_out_proj.project(self.merge_heads(output, hidden_states))
        if not self.normalize_before:
            hidden_states = self.encoder_attn_layer_norm(hidden_states)
        return self.feed_forward(hidden_states)

    def merge_heads(self, output: torch.Tensor, hidden_states: torch.Tensor) -> torch.Tensor:
        return output.reshape(hidden_states.shape[0], hidden_states.shape[1], -1).contiguous()


class DecoderLayerSteps(nn.Module):
    """Every decoder layer's step ([`LayerStep`]) and the decoder's final norm: from the embedded tokens
    `(rows, 1, d_model)` to the hidden states the LM head takes, `(rows, d_model)`. `keys[i]`, `values[i]`: layer
    `i`'s self-attention cache `(batch, heads, max_length, beams, head_dim)`, written at `position`, and
    `self_columns` where each row's history lies in it ([`attend_history`]); `source_keys[i]`, `source_values[i]`:
    its cross-attention's, `(batch, heads, source, head_dim)`; `cos`, `sin`: RoPE's angles of the position, or None;
    the row indices of [`multiply`] for the self-attention values and the source's keys and values, or None for
    batched matmuls. With `causal` (an additive mask `(1, 1, nodes, (position + levels) * beams)` over the cache's
    positions and slots), the rows are nodes of each sentence, `(sentences, nodes, d_model)`: its next positions
    from `position` on, or a tree of its beams, `levels` of one node a slot, each attending to the slots the mask
    leaves it (a check of drafted tokens or beams: `zhen.draft_decoding`, [`zhen.decoder_steps.DecoderSteps.steps`]);
    returns `(sentences * nodes, d_model)`."""

    def __init__(self, decoder: nn.Module, products: dict):
        super().__init__()
        self.layers = nn.ModuleList(LayerStep(layer, products) for layer in decoder.layers)
        self.layer_norm = decoder.layer_norm

    def forward(self, hidden_states: torch.Tensor, keys: list[torch.Tensor], values: list[torch.Tensor], position: int,
                source_keys: list[torch.Tensor], source_values: list[torch.Tensor], source_bias: torch.Tensor,
                cos: torch.Tensor | None, sin: torch.Tensor | None, self_columns: torch.Tensor | None,
                self_rows: RowIndex | None, source_key_rows: RowIndex | None, source_value_rows: RowIndex | None,
                causal: torch.Tensor | None = None) -> torch.Tensor:  # fmt: skip
        i = 0
        for layer in self.layers:
            hidden_states = layer(hidden_states, keys[i], values[i], position, source_keys[i], source_values[i],
                                  source_bias, cos, sin, self_columns, self_rows, source_key_rows, source_value_rows,
                                  causal)  # fmt: skip
            i += 1
        hidden_states = self.layer_norm(hidden_states)
        return hidden_states[:, 0] if causal is None else hidden_states.flatten(0, 1)


class EncoderLayerStep(ResidualLayer):
    """One `ZhenEncoderLayer`'s forward over sentences without padding (no mask): self-attention through SDPA or as
    `eager_attention_forward` computes it (`sdpa`), then feed-forward, each a residual branch, pre- or post-norm; or,
    given its attention `groups`, over the sentences of a padded batch packed into one row (`zhen.packing`)."""

    normalize_before: Final[bool]
    heads: Final[int]
    scaling: Final[float]
    sdpa: Final[bool]

    def __init__(self, layer: nn.Module, products: dict, sdpa: bool):
        super().__init__()
        self.normalize_before, self.sdpa = layer.normalize_before, sdpa
        self.heads, self.scaling = layer.self_attn.num_heads, layer.self_attn.scaling
        self.self_attn_layer_norm, self.final_layer_norm = layer.self_attn_layer_norm, layer.final_layer_norm
        self.qkv_proj, self.out_proj = products[layer.self_attn.qkv_proj], products[layer.self_attn.out_proj]
        self.mlp = products[layer.mlp]

    def forward(self, hidden_states: torch.Tensor, cos: torch.Tensor | None, sin: torch.Tensor | None,
                groups: Groups | None = None) -> torch.Tensor:  # fmt: skip
        residual = hidden_states
        if self.normalize_before:
            hidden_states = self.self_attn_layer_norm(hidden_states)
        batch, length = hidden_states.shape[0], hidden_states.shape[1]
        projected = self.qkv_proj.project(hidden_states).view(batch, length, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        query, key, value = projected[0], projected[1], projected[2]
        if cos is not None and sin is not None:
            query, key = apply_rotary_pos_emb(query, key, cos, sin)
        if groups is not None:
            output = attend_groups(query, key, value, self.scaling, groups)
        elif self.sdpa:
            output = nn.functional.scaled_dot_product_attention(query, key, value, scale=self.scaling).transpose(1, 2)
        else:
            scores = torch.matmul(query, key.transpose(2, 3)) * self.scaling
            weights = nn.functional.softmax(scores, dim=-1, dtype=torch.float32).to(query.dtype)
            output = torch.matmul(weights, value).transpose(1, 2)
        output = output.contiguous().reshape(batch, length, -1).contiguous()
        hidden_states = residual + self.out_proj.project(output)
        if not self.normalize_before:
            hidden_states = self.self_attn_layer_norm(hidden_states)
        return self.feed_forward(hidden_states)


class EncoderSteps(nn.Module):
    """Every encoder layer ([`EncoderLayerStep`]) and the encoder's final norm, from the embedded sentences `(batch,
    length, d_model)` (and RoPE's `cos`, `sin`, or None) to the encoder's output; or from the embedded tokens of a
    packed batch, `(1, tokens, d_model)`, with its attention `groups` ([`attend_groups`])."""

    def __init__(self, encoder: nn.Module, products: dict, sdpa: bool):
        super().__init__()
        self.layers = nn.ModuleList(EncoderLayerStep(layer, products, sdpa) for layer in encoder.layers)
        self.layer_norm = encoder.layer_norm

    def forward(self, hidden_states: torch.Tensor, cos: torch.Tensor | None, sin: torch.Tensor | None,
                groups: Groups | None = None) -> torch.Tensor:  # fmt: skip
        for layer in self.layers:
            hidden_states = layer(hidden_states, cos, sin, groups)
        return self.layer_norm(hidden_states)


def product_of(module: nn.Module) -> nn.Module | None:
    """The [`Product`] (or, for a feed-forward block, [`FeedForward`]) that computes what `module`, one of a decoder
    layer's projections or its MLP as a decoding session has them, computes in a step; None for a kind it does not
    know. By class name: Hub custom code has its own copies of these classes."""
    kind = type(module).__name__
    if type(module) is nn.Linear:
        return PlainProduct(module.weight, module.bias)
    if kind == "PackedLinear" and module.onednn is not None:
        bias = module.linear.bias
        return OnednnProduct(module.onednn, bias, plain=module.linear.weight, plain_bias=bias, rows=module.few_rows)
    if kind == "PackedLinear" and getattr(module, "mkl", None) is not None:
        return MklProduct(module.mkl, module.linear.weight, module.linear.bias)
    if kind == "Bf16Linear":
        rows = getattr(module, "few_rows", 0)  # as the session linear multiplies: in float32 up to these rows
        plain, plain_bias = (module.linear.weight, module.linear.bias) if rows else (None, None)
        product = OnednnProduct if module.packed else PlainProduct
        return product(module.weight, module.bias, True, plain, plain_bias, rows)
    if kind == "Int8Linear":
        if module.many_rows is None:  # oneDNN's packing not made: the program's steps are of fewer rows
            return Int8Product(module.packed, module.reduce_range, module.packed, sys.maxsize)
        return Int8Product(module.packed, module.reduce_range, module.many_rows, module.many_rows_numel)
    if kind in ("Bf16ReluMLP", "Int8ReluMLP"):
        fc1, fc2 = product_of(module.fc1), product_of(module.fc2)
        return FeedForward(fc1, fc2, "relu")
    if kind == "ZhenMLP" and _inert(module.activation_dropout):
        activation = _activation(module.activation_fn)
        fc1, fc2 = product_of(module.fc1), product_of(module.fc2)
        # An int8 MLP whose ReLU fuses is an `Int8ReluMLP` in a session; this one's does not (oneDNN's packing).
        fuse_relu = not isinstance(fc1, Int8Product)
        return None if None in (activation, fc1, fc2) else FeedForward(fc1, fc2, activation, fuse_relu)
    return None


def _inert(dropout: nn.Module) -> bool:
    return isinstance(dropout, nn.Identity) or (type(dropout) is nn.Dropout and not dropout.training)


def _activation(function: nn.Module) -> str | None:
    kind = type(function).__name__
    if type(function) is nn.ReLU:
        return "relu"
    if kind == "GELUActivation" and getattr(function, "act", None) is nn.functional.gelu:
        return "gelu"
    if type(function) is nn.SiLU or kind == "SiLUActivation":
        return "silu"
    return None


def decoder_layer_steps(decoder: nn.Module) -> DecoderLayerSteps | None:
    """[`DecoderLayerSteps`] of `decoder` as a session has it, or None where one of its layers holds a module of a kind
    [`product_of`] does not know, or a norm that is not an `nn.LayerNorm`."""
    products = {}
    for layer in decoder.layers:
        norms = (layer.self_attn_layer_norm, layer.encoder_attn_layer_norm, layer.final_layer_norm)
        if any(type(norm) is not nn.LayerNorm for norm in norms):
            return None
        for module in (layer.self_attn.qkv_proj, layer.self_attn.out_proj, layer.encoder_attn.q_proj,
                       layer.encoder_attn.out_proj, layer.mlp):  # fmt: skip
            products[module] = product_of(module)
            if products[module] is None:
                return None
    if type(decoder.layer_norm) not in (nn.LayerNorm, nn.Identity):
        return None
    return DecoderLayerSteps(decoder, products)


def encoder_steps(encoder: nn.Module, sdpa: bool) -> EncoderSteps | None:
    """[`EncoderSteps`] of `encoder` as a session has it, or None where a layer holds a module of a kind
    [`product_of`] does not know, or a norm that is not an `nn.LayerNorm`."""
    products = {}
    for layer in encoder.layers:
        if any(type(norm) is not nn.LayerNorm for norm in (layer.self_attn_layer_norm, layer.final_layer_norm)):
            return None
        for module in (layer.self_attn.qkv_proj, layer.self_attn.out_proj, layer.mlp):
            products[module] = product_of(module)
            if products[module] is None:
                return None
    if type(encoder.layer_norm) not in (nn.LayerNorm, nn.Identity):
        return None
    return EncoderSteps(encoder, products, sdpa)


def kept_steps(stack: nn.Module, owner: nn.Module, script: bool, build=None, variant=None) -> nn.Module | None:
    """`build(stack)` ([`decoder_layer_steps`] by default) as a session of the model has it, compiled with `script`
    ([`scripted`], the program kept for `owner`); the very steps of the last session where that session's `stack` was
    made of the same modules holding the same weights ([`sources`]) and `variant` was the same: building and binding
    them again costs more than a step."""
    found = sources(stack)
    kept = _BUILT.setdefault(owner, {})
    last = kept.get((script, variant))
    if last is not None and len(last[0]) == len(found) and all(a is b for a, b in zip(last[0], found)):
        return last[1]
    steps = (build or decoder_layer_steps)(stack)
    if script and steps is not None:
        steps = scripted(steps, owner)
    kept[(script, variant)] = found, steps
    return steps


def sources(decoder: nn.Module) -> list:
    """Every module of `decoder` and its parameters and buffers: what its layer steps hold. A session's copies of
    weights never change (a change of the weights makes new ones), nor do its lean modules."""
    found = []
    for module in submodules(decoder):
        found.append(module)
        found.extend(module._parameters.values())
        found.extend(module._buffers.values())
    return found


def submodules(root: nn.Module) -> list[nn.Module]:
    """`list(root.modules())` in breadth-first order (parents before children), at a third of its cost: no names."""
    found, seen = [root], {id(root)}
    for module in found:
        for child in module._modules.values():
            if child is not None and id(child) not in seen:
                seen.add(id(child))
                found.append(child)
    return found


def interpreted(program: nn.Module):
    """The context `program` (layer steps, compiled or not) runs in: a compiled one under TorchScript's plain
    interpreter, since its optimizing executor re-profiles at every new shape (a decoding step's cache grows every
    step); one in Python as it is."""
    if isinstance(program, torch.jit.ScriptModule):
        return torch.jit.optimized_execution(False)
    return contextlib.nullcontext()


def scripted(steps: DecoderLayerSteps, owner: nn.Module) -> nn.Module:
    """`steps` compiled by TorchScript, or `steps` itself where TorchScript cannot compile it (a PyTorch without it):
    the same computation in Python; a failure is reported once and not tried again. Compiling takes tens of
    milliseconds, more than translating a sentence: the program compiled for `owner` (the model) is kept, and the
    steps of its later sessions, where they have the same [`structure`], are bound into it instead ([`bind`]). Its
    module calls are inlined ([`inline`])."""
    global _SCRIPTING_FAILED
    if _SCRIPTING_FAILED:
        return steps
    shape = structure(steps)
    kept = _KEPT.get(owner)
    if kept is not None and kept[0] == shape:
        bind(kept[1], steps)
        return kept[1]
    try:
        with _COMPILING, warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch.jit.script is deprecated in favour of torch.export (torch 2.13)
            program = torch.jit.script(steps)
            inline(program)
    except Exception as error:  # noqa: BLE001 - whatever stops the compiler leaves the Python module, just as exact
        _SCRIPTING_FAILED = True
        warnings.warn(f"TorchScript cannot compile the decoder's steps ({error}); they run in Python.", stacklevel=2)
        return steps
    _KEPT[owner] = shape, program
    return program


def inline(program: torch.jit.ScriptModule):
    """Inline every module and function `program`'s forward calls into its graph, before its first run: the plain
    interpreter ([`interpreted`]) then runs one graph, without a call frame per module call (a step of a few rows
    makes ~100). The same operations in the same order; submodules' weights are still read through their attributes,
    so [`bind`] works as before. The graph is its compiled class's, shared with every program of the same structure
    (compiled later, they find it inlined). Where this PyTorch lacks the pass, the calls stay."""
    inline_calls = getattr(torch._C, "_jit_pass_inline", None)
    if inline_calls is not None:
        inline_calls(program.graph)


_COMPILING = threading.Lock()  # sessions of two models may compile at once; a graph is inlined by one thread
_SCRIPTING_FAILED = False  # a failed compilation leaves TorchScript's types half-defined: later ones fail too
_KEPT: "weakref.WeakKeyDictionary[nn.Module, tuple[tuple, torch.jit.ScriptModule]]" = weakref.WeakKeyDictionary()
# The layer steps of a model's last session, scripted or not: what they were built from ([`sources`]), and they.
_BUILT: "weakref.WeakKeyDictionary[nn.Module, dict[tuple, tuple[list, nn.Module | None]]]" = weakref.WeakKeyDictionary()


def structure(steps: DecoderLayerSteps) -> tuple:
    """What TorchScript compiles `steps` as: each module's name, class and constants, and what each of its weights is
    (a parameter, another tensor, a packed int8 weight or None)."""
    return tuple(
        (name, f"{type(module).__module__}.{type(module).__qualname__}", _constants(module),
         tuple((attribute, _kind(value)) for attribute, value in _weights(module).items()))
        for name, module in steps.named_modules()
    )  # fmt: skip


def bind(program: torch.jit.ScriptModule, steps: DecoderLayerSteps):
    """Make `program`, compiled from steps of the same [`structure`], compute with the weights of `steps`."""
    for name, module in steps.named_modules():
        target = _submodule(program, name)
        for attribute, value in _weights(module).items():
            target.setattr(attribute, value)


def release(owner: nn.Module):
    """Let the steps kept for `owner` go, and its program drop the tensors that are not the model's parameters (a
    session's copies of its weights), until a later session binds its own."""
    _BUILT.pop(owner, None)
    kept = _KEPT.get(owner)
    if kept is None:
        return
    shape, program = kept
    for name, _, _, weights in shape:
        target = _submodule(program, name)
        for attribute, kind in weights:
            if kind == "tensor":
                target.setattr(attribute, torch.empty(0))


def _submodule(program: torch.jit.ScriptModule, name: str) -> torch._C.ScriptModule:
    """The compiled module `name` of `program` (its Python wrappers may hand back the modules it was compiled from)."""
    module = program._c
    for part in name.split(".") if name else ():
        module = module.getattr(part)
    return module


def _weights(module: nn.Module) -> dict:
    found = {**module._parameters, **module._buffers}
    for name, value in vars(module).items():
        if not name.startswith("_") and (value is None or isinstance(value, (torch.Tensor, torch.ScriptObject))):
            found[name] = value
    return found


def _kind(value) -> str:
    if value is None or isinstance(value, torch.ScriptObject):
        return "none" if value is None else "packed"
    return "parameter" if isinstance(value, nn.Parameter) else "tensor"


def _constants(module: nn.Module) -> tuple:
    return tuple(
        (name, value)
        for name, value in sorted(vars(module).items())
        if not name.startswith("_") and name != "training" and isinstance(value, (bool, int, float, str, tuple))
    )
