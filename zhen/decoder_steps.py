# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""The model's decoder run one step at a time over a preallocated cache (`zhen.decoding_cache`), as a decoding session
(`zhen.fast_generation.FastDecoder`) runs it for the search (`zhen.search`): [`DecoderSteps`], its layers' forwards or,
on a CPU, their program (`zhen.layer_steps`); [`StaticDecoderSteps`], the same with static shapes, each step replayed
as a CUDA graph on a GPU.
"""

import math

import torch
from torch import nn

from .decoding_cache import LineageCache, StaticDecodingCache, Workspace, row_index
from .layer_steps import DecoderLayerSteps, interpreted, submodules
from .search import argmax
from .session_modules import ScreensArgmax


def position_table(config) -> float:
    """The most positions the model's position table holds (RoPE: no limit)."""
    if getattr(config, "position_embedding_type", "sinusoidal") == "rope":
        return math.inf
    return getattr(config, "max_position_embeddings", math.inf)


SCREEN_PATIENCE = 4  # steps of a batch the screen may decline (too many candidates) before the batch stops screening


class DecoderSteps:
    """The model's decoder run one token per row at a time over a [`StaticDecodingCache`].

    `step(tokens, position)` embeds `tokens` (one per row; rows are `batch * num_beams`, beams of a sentence
    adjacent), runs every `ZhenDecoderLayer` and returns the hidden state after the final norm; `logits` applies the
    LM head; `reorder(rows, length)` makes row `i` continue the history of row `rows[i]` (beam search).
    `one_row_per_sentence()` before the first step runs one row per sentence until `expand(rows, length)` (beam
    search's first steps, where the beams of a sentence share their history).
    """

    shares_first_steps = True
    passes_several = True  # `steps`: several positions of one sentence in one pass

    def __init__(self, model, encoder_hidden_states, attention_mask, num_beams: int, max_length: int,
                 attention_dtype: torch.dtype | None = None, workspace: Workspace | None = None,
                 layer_steps: "DecoderLayerSteps | None" = None,
                 source_keys_values: list[tuple[torch.Tensor, torch.Tensor]] | None = None):  # fmt: skip
        """`attention_dtype`: what the source's keys and values are held in for cross-attention, where the encoder's
        output comes in another (a bf16 session: bf16 encoder output, float32 or bf16 source keys and values:
        `zhen.fast_generation.source_dtype`); by default the encoder output's. `workspace`: the
        session's kept memory (by default new memory). `layer_steps`: the decoder's layers as one program
        ([`zhen.layer_steps.DecoderLayerSteps`], scripted or not) that steps run instead of the layers' forwards
        (the model must allow it: [`inline_layers_work`]). `source_keys_values`: each layer's keys and values of the
        source where they are known (a draft's: its model's, `zhen.fast_generation.FastDecoder.draft_steps`); by
        default projected."""
        self.decoder = model.get_decoder()
        self.layer_steps = layer_steps
        self.lm_head = model.lm_head
        self.screen_declined = 0
        batch = len(attention_mask)
        self.rows, self.device = batch * num_beams, attention_mask.device
        self.vocab_size = model.config.vocab_size
        if max_length > position_table(model.config):
            raise ValueError(
                f"Generating {max_length} decoder positions exceeds max_position_embeddings="
                f"{model.config.max_position_embeddings} of this {model.config.position_embedding_type} position "
                "table; lower max_new_tokens."
            )
        if source_keys_values is None:
            source_keys_values = [
                layer.encoder_attn.source_keys_and_values(encoder_hidden_states, None) for layer in self.decoder.layers
            ]
        self.cache = self.new_cache(
            source_keys_values, attention_dtype or encoder_hidden_states.dtype, workspace, num_beams
        )
        self.cache.allocate(self.rows, max_length)
        self.position_table = step_position_table(self.decoder)
        # Additive source mask (batch, 1, 1, source), in float32 like the scores it is added to.
        self.source_bias = torch.zeros(attention_mask.shape, dtype=torch.float32, device=self.device)
        self.source_bias = self.source_bias.masked_fill_(attention_mask == 0, torch.finfo(torch.float32).min)
        self.source_bias = self.source_bias[:, None, None, :]

    def new_cache(self, source_keys_values, dtype: torch.dtype, workspace, beams: int) -> StaticDecodingCache:
        return LineageCache(source_keys_values, dtype, workspace, beams)

    def step(self, tokens: torch.LongTensor, position: int) -> torch.Tensor:
        self.cache.position = position
        if self.position_table is not None:
            return self.run_embedded(self.embed_step(tokens, position), None, None)
        position_ids = torch.full((1, 1), position, dtype=torch.long, device=tokens.device)
        return self.run_layers(tokens[:, None], position_ids, None)  # one new token over its history: no mask

    def embed_step(self, tokens: torch.LongTensor, position: int) -> torch.Tensor:
        """What the decoder's `embed` computes for one token a row at one absolute position, `(rows, 1, d_model)`: its
        two table lookups without its module calls and position check (`__init__` checked the steps' positions)."""
        decoder = self.decoder
        hidden_states = nn.functional.embedding(tokens[:, None], decoder.embed_tokens.weight) * decoder.embed_scale
        return hidden_states + self.position_table[position].to(hidden_states.dtype)

    def steps(self, tokens: torch.LongTensor, position: int, origins: torch.LongTensor | None = None) -> torch.Tensor:
        """The hidden states after several tokens of a batch of one sentence in one pass, `(len(tokens), d_model)`:
        its next `len(tokens)` tokens from `position` on in one row, each attending to its history and the tokens
        before it (what as many `step`s return, up to float32 rounding); or, with `origins`, a tree of its beams'
        tokens: `levels` of one node a cache slot (`tokens` `(levels * beams,)`, level `j` at `position + j`), node
        `r` attending to the slot `origins[r, p]` at each position `p` up to its own (`(levels * beams, position +
        levels)`: its history, its ancestors in the tree and itself; [`zhen.draft_decoding.tree_origins`]). The
        cache holds their keys and values, node `i` of a level in slot `i`. `tokens` `(sentences, levels)`: the next
        positions of a batch of one row a sentence, `(sentences * levels, d_model)` returned, row after row."""
        slots = self.cache.beams
        width = 1 if origins is None else slots  # nodes a level
        nodes = tokens.shape[-1]
        levels = nodes // width
        end = position + levels
        self.cache.position, self.cache.end = position, end
        if origins is None:  # one row: the first slot
            origins = torch.zeros((levels, end), dtype=torch.long, device=tokens.device)
        node_positions = torch.arange(position, end, device=tokens.device).repeat_interleave(width)
        columns = torch.arange(end, device=tokens.device) * slots + origins
        later = node_positions[:, None] < torch.arange(end, device=tokens.device)
        lowest = torch.finfo(torch.float32).min
        mask = torch.full((nodes, end * slots), lowest, device=tokens.device)
        mask.scatter_(1, columns, torch.zeros(later.shape, device=tokens.device).masked_fill_(later, lowest))
        hidden_states = self.run_layers(tokens.view(-1, nodes), node_positions[None], mask[None, None])
        return hidden_states.reshape(tokens.numel(), -1)

    def run_layers(self, tokens, position_ids, self_attention_mask) -> torch.Tensor:
        hidden_states, position_embeddings = self.decoder.embed(tokens, None, position_ids)
        return self.run_embedded(hidden_states, position_embeddings, self_attention_mask)

    def run_embedded(self, hidden_states, position_embeddings, self_attention_mask) -> torch.Tensor:
        if self.layer_steps is not None and (self_attention_mask is None or hidden_states.shape[1] > 1):
            return self.run_layer_steps(hidden_states, position_embeddings, self_attention_mask)
        for layer in self.decoder.layers:
            hidden_states = layer(
                hidden_states,
                self_attention_mask,
                None,  # the source's keys and values are in the cache
                encoder_attention_mask=self.source_bias,
                position_embeddings=position_embeddings,
                cache=self.cache,
                decoding_cache=self.cache,  # for `decoding_attention`: where each row's history lies
            )
        hidden_states = self.decoder.layer_norm(hidden_states)
        return hidden_states[:, 0] if hidden_states.shape[1] == 1 else hidden_states

    def run_layer_steps(self, hidden_states, position_embeddings, causal=None) -> torch.Tensor:
        """The layers of a step of one new token per row as `self.layer_steps` runs them, over this step's caches;
        with `causal`, of several positions of one sentence ([`DecoderSteps.steps`])."""
        cache, config = self.cache, self.decoder.config
        heads = config.decoder_attention_heads
        cache.allocate_layers(heads, config.d_model // heads, hidden_states.dtype, hidden_states.device)
        source = cache.layers[0]
        queries = self.rows // len(self.source_bias)
        if causal is None:
            columns, value_rows = cache.history(cache.position + 1)
            key_rows = row_index(source.keys.transpose(-1, -2), queries)
            source_value_rows = row_index(source.values, queries)
        else:  # several positions of one sentence: batched matmuls
            columns = value_rows = key_rows = source_value_rows = None
        cos, sin = position_embeddings or (None, None)
        with interpreted(self.layer_steps):
            return self.layer_steps(
                hidden_states, cache.keys, cache.values, cache.position, cache.source_keys, cache.source_values,
                self.source_bias, cos, sin, columns, value_rows, key_rows, source_value_rows, causal,
            )  # fmt: skip

    def logits(self, hidden_states: torch.Tensor) -> torch.Tensor:
        """Float32 logits, in kept memory where the LM head computes in another dtype: the caller may write them."""
        logits = self.lm_head(hidden_states)
        if logits.dtype == torch.float32:
            return logits
        return self.cache.workspace.copy("logits", logits, torch.float32)

    def next_tokens(self, hidden_states: torch.Tensor, banned: int | None = None) -> torch.LongTensor:
        """Greedy search's next token of each row, never `banned`: screened ([`ScreensArgmax`]) where the session's
        LM head can, until the screen has declined `SCREEN_PATIENCE` steps of this batch; else the argmax of
        the logits."""
        if self.screen_declined < SCREEN_PATIENCE and isinstance(self.lm_head, ScreensArgmax):
            tokens = self.lm_head.next_tokens(hidden_states, banned)
            if tokens is not None:
                return tokens
            self.screen_declined += 1
        logits = self.logits(hidden_states)
        if banned is not None:
            logits[:, banned] = -math.inf
        return argmax(logits)

    def reorder(self, rows: torch.LongTensor, length: int):
        self.cache.reorder(rows, length)

    def one_row_per_sentence(self):
        self.rows = len(self.source_bias)
        self.cache.allocate(self.rows, self.cache.max_length)

    def expand(self, rows: torch.LongTensor, length: int):
        """Go on with row `i` continuing the history of sentence `rows[i]`."""
        self.cache.expand(rows, length)
        self.rows = len(rows)

    def keep(self, sentences: torch.LongTensor, length: int):
        """Go on decoding only `sentences` (indices into the current batch), with all their beams."""
        beams = self.rows // len(self.source_bias)
        rows = (sentences[:, None] * beams + torch.arange(beams, device=self.device)).view(-1)
        self.cache.keep(rows, sentences, length)
        self.source_bias = self.source_bias.index_select(0, sentences)
        self.rows = len(rows)


def step_position_table(decoder: nn.Module) -> torch.Tensor | None:
    """The table of absolute positions a step of `decoder` looks its position up in ([`DecoderSteps.embed_step`]);
    None where `embed` computes more than two lookups: RoPE, dropout (training), an embedding of its own kind."""
    tokens = decoder.embed_tokens
    plain = type(tokens) is nn.Embedding and tokens.max_norm is None and not decoder.training
    if not plain or decoder.position_embedding_type == "rope":
        return None
    return decoder.embed_positions.weight


def inline_layers_work(model, stack: nn.Module | None = None) -> bool:
    """Whether the layers of `stack` (by default the decoder) may run as one program ([`zhen.layer_steps`]) that
    computes what their forwards compute: in eval mode (it leaves out dropout), with no forward hooks (which only
    module calls run)."""
    module = torch.nn.modules.module
    if module._global_forward_hooks or module._global_forward_pre_hooks:
        return False
    stack = model.get_decoder() if stack is None else stack
    return not stack.training and not any(m._forward_hooks or m._forward_pre_hooks for m in submodules(stack))


class StaticDecoderSteps(DecoderSteps):
    """[`DecoderSteps`] whose every step has the same shapes and reads its inputs from the same tensors, so that on a
    GPU it can be captured once as a CUDA graph and replayed (`cuda_graph=True`): a decoder step is hundreds of small
    kernels there, and launching them one by one from Python, not running them, is what a step costs. Self-attention
    runs over the whole preallocated cache under a mask of the positions written so far (masked scores weigh exactly
    0); the step writes its keys and values at the position a tensor holds. Rows leaving the batch change the
    shapes: the graph is captured again. Without `cuda_graph` the same computation runs eagerly, on any device."""

    shares_first_steps = False  # its cache is zeroed and written at a position tensor: it keeps its rows
    passes_several = False

    def new_cache(self, source_keys_values, dtype: torch.dtype, workspace, beams: int) -> StaticDecodingCache:
        return StaticDecodingCache(source_keys_values, dtype, workspace)

    def __init__(self, *args, cuda_graph: bool, **kwargs):
        super().__init__(*args, **kwargs)
        self.tokens = torch.zeros((self.rows, 1), dtype=torch.long, device=self.device)
        self.position_ids = torch.zeros((1, 1), dtype=torch.long, device=self.device)
        self.cache.write_position = self.position_ids[0]
        masked = torch.finfo(torch.float32).min
        self.self_bias = torch.full((1, 1, 1, self.cache.max_length), masked, device=self.device)
        self.cuda_graph = cuda_graph
        self.graph: torch.cuda.CUDAGraph | None = None
        self.hidden_states: torch.Tensor | None = None  # the graph's output, rewritten by every replay

    def step(self, tokens: torch.LongTensor, position: int) -> torch.Tensor:
        self.tokens.copy_(tokens[:, None])
        self.position_ids.fill_(position)
        self.self_bias[..., position] = 0
        if not self.cuda_graph or self.cache.keys[0] is None:  # the first step allocates the cache, eagerly
            return self.run_layers(self.tokens, self.position_ids, self.self_bias)
        if self.graph is None:
            self.capture()
        self.graph.replay()
        return self.hidden_states

    def capture(self):
        with torch.cuda.device(self.device):  # the model's GPU, also where it is not the current one
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):  # warm-up, as CUDA graphs want: the same inputs, so the same cache writes
                self.run_layers(self.tokens, self.position_ids, self.self_bias)
            torch.cuda.current_stream().wait_stream(side)
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph):
                self.hidden_states = self.run_layers(self.tokens, self.position_ids, self.self_bias)

    def keep(self, sentences: torch.LongTensor, length: int):
        super().keep(sentences, length)
        self.tokens = self.tokens.new_zeros((self.rows, 1))
        self.graph = self.hidden_states = None


def cuda_graphs_work(model) -> bool:
    """Whether [`StaticDecoderSteps`] can capture `model`'s decoder step: RoPE types whose frequencies depend on the
    longest position so far (dynamic, longrope) read it on the host at every step."""
    rope = getattr(model.config, "rope_parameters", None) or {}
    rope_type = rope.get("rope_type", "default")
    return "dynamic" not in rope_type and rope_type != "longrope"


__all__ = ["DecoderSteps", "StaticDecoderSteps", "cuda_graphs_work", "inline_layers_work"]
