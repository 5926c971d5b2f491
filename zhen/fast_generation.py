# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""Lean greedy and beam-search decoding for zhen models.

`generate(model, input_ids, attention_mask, forced_bos_token_id=..., num_beams=...)` returns the same token ids as
`model.generate(...)` with the same arguments (greedy, or beam search with Transformers' length penalty and early
stopping rules), with far less work around the model at each step:

- a static key/value cache, preallocated for the whole output and written in place; beam reordering gathers into a
  spare buffer (one copy instead of two);
- cross-attention keys/values computed once per batch from the un-expanded source; in beam search the beams of a
  sentence share them, attending as a block of queries rather than as copies of the source;
- float32 projections and LM head multiplied by weights packed once into MKL's GEMM layout (bit-identical results,
  1.3-1.6x faster for the few-row products of decoding, where plain `sgemm` repacks the weight on every call);
- one loop with the bookkeeping of greedy or beam search done on small tensors, without logits processors, stopping
  criteria, cache objects, masks or output capturing; argmax and top-k found from block maxima (CPU `argmax`/`topk`
  over a 32k vocabulary are several times slower than `amax`);
- the LM head skipped on the step whose token is forced (the target language code).

The encoder and every sub-layer (norms, activations, residual wiring) are the model's own modules, so the numbers are
the model's: in float32 the outputs equal `model.generate` (`tests/test_fast_generation.py`). On a model quantized
with `zhen.quantization.quantize_dynamic` it is the fast int8 decoder; bfloat16 works but is only fast on CPUs with
native bf16 (AMX, AVX512-BF16).
"""

import functools
import math
import weakref
from collections.abc import Callable

import torch
from torch import nn

from .modeling_zhen import ZhenLinear, apply_rotary_pos_emb


# Generation options this decoder does not implement, with the value that switches each off. `generate` refuses them
# (passed, or set in the model's generation config) rather than silently ignoring them.
UNSUPPORTED = dict(
    do_sample=False, repetition_penalty=1.0, no_repeat_ngram_size=0, encoder_no_repeat_ngram_size=0,
    bad_words_ids=None, sequence_bias=None, suppress_tokens=None, begin_suppress_tokens=None, num_beam_groups=1,
    diversity_penalty=0.0, exponential_decay_length_penalty=None, renormalize_logits=False, min_length=0,
    return_dict_in_generate=False, output_scores=False, output_logits=False, output_attentions=False,
    output_hidden_states=False,
)  # fmt: skip
IGNORED = ("use_cache", "max_length")  # the cache is always on; max_length is read as 1 + max_new_tokens
ARGUMENTS = ("forced_bos_token_id", "num_beams", "max_new_tokens", "min_new_tokens", "length_penalty", "early_stopping",
             "num_return_sequences", "input_ids", "attention_mask")  # fmt: skip


def unsupported_options(model, **generate_kwargs) -> list[str]:
    """The generation options, passed or set in `model.generation_config`, that `generate` here does not implement:
    empty when it can stand in for `model.generate(**generate_kwargs)`."""
    config = model.generation_config
    found = [name for name, off in UNSUPPORTED.items() if getattr(config, name, off) not in (off, None)]
    for name, value in generate_kwargs.items():
        if name in UNSUPPORTED and value not in (UNSUPPORTED[name], None):
            found.append(name)
        elif name not in UNSUPPORTED and name not in ARGUMENTS + IGNORED:
            found.append(name)
    if isinstance(config.eos_token_id, (list, tuple)) and len(config.eos_token_id) > 1:
        found.append("eos_token_id")
    return sorted(set(found))


@torch.inference_mode()
def generate(
    model,
    input_ids: torch.LongTensor,
    attention_mask: torch.Tensor | None = None,
    forced_bos_token_id: int | None = None,
    num_beams: int | None = None,
    max_new_tokens: int | None = None,
    min_new_tokens: int | None = None,
    length_penalty: float | None = None,
    early_stopping: bool | str | None = None,
    num_return_sequences: int = 1,
    **generate_kwargs,
) -> torch.LongTensor:
    """Translate a batch with greedy search (`num_beams=1`) or beam search, like `model.generate(**same_arguments)`.

    Args:
        model ([`ZhenForConditionalGeneration`]): in eval mode, any dtype; its `generation_config` supplies the
            defaults of the arguments left as `None` and the special token ids.
        input_ids, attention_mask: the tokenized source, `(batch, source_length)`.
        forced_bos_token_id: the target language code, forced as the first generated token.
        num_beams: 1 for greedy search.
        max_new_tokens / min_new_tokens: bounds on the number of generated tokens (the language code included, as
            in `generate`); `</s>` is suppressed until `min_new_tokens` have been produced.
        length_penalty, early_stopping: beam search's finished-hypothesis score `sum log p / length**length_penalty`
            and its stopping rule (`True`, `False` or `"never"`), with Transformers' semantics and defaults.
        num_return_sequences: best hypotheses returned per source sentence (beam search).
        generate_kwargs: other `model.generate` options, accepted only at their neutral values (`do_sample=False`,
            `use_cache=True`, ...; `max_length=n` is read as `max_new_tokens=n - 1`). Anything else raises
            `NotImplementedError`; check first with [`unsupported_options`].

    Returns:
        `torch.LongTensor` of shape `(batch * num_return_sequences, 1 + generated_length)`: the decoder start token,
        then the generated tokens; finished rows are padded as `model.generate` pads them.
    """
    config = model.generation_config
    unsupported = unsupported_options(model, **generate_kwargs)
    if unsupported:
        raise NotImplementedError(f"fast generation does not implement {unsupported}; use model.generate")
    if max_new_tokens is None and generate_kwargs.get("max_length") is not None:
        max_new_tokens = generate_kwargs["max_length"] - 1
    num_beams = num_beams or config.num_beams or 1
    if max_new_tokens is None:  # as `generate`: `max_length` (default 20) new tokens, within the position table
        longest = min((config.max_length or 20) + 1, getattr(model.config, "max_position_embeddings", math.inf))
        max_new_tokens = config.max_new_tokens or longest - 1
    min_new_tokens = min_new_tokens if min_new_tokens is not None else (config.min_new_tokens or 0)
    if forced_bos_token_id is None:
        forced_bos_token_id = config.forced_bos_token_id
    eos = config.eos_token_id
    if isinstance(eos, (list, tuple)):
        eos = eos[0]
    options = dict(
        eos=eos,
        pad=config.pad_token_id,
        start=config.decoder_start_token_id,
        forced_bos=forced_bos_token_id,
        forced_eos=config.forced_eos_token_id,
        min_new_tokens=min_new_tokens,
        max_length=1 + max_new_tokens,
    )
    if attention_mask is None:
        attention_mask = torch.ones_like(input_ids)
    encoder_hidden_states = model.get_encoder()(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
    decoder = StaticCacheDecoder(model, encoder_hidden_states, attention_mask, num_beams, 1 + max_new_tokens)
    if num_beams == 1:
        return greedy_search(decoder, len(input_ids), **options)
    if length_penalty is None:
        length_penalty = 1.0 if config.length_penalty is None else config.length_penalty
    if early_stopping is None:
        early_stopping = config.early_stopping or False
    if not 1 <= num_return_sequences <= num_beams:
        raise ValueError(f"num_return_sequences={num_return_sequences} must be between 1 and num_beams={num_beams}")
    return beam_search(
        decoder, len(input_ids), num_beams, length_penalty, early_stopping, num_return_sequences, **options
    )


class StaticCacheDecoder:
    """The decoder stack of a zhen model run one token at a time over a preallocated cache.

    `step(tokens, position)` embeds `tokens` (one per row; rows are `batch * num_beams`, beams of a sentence
    adjacent), runs every decoder layer and returns the hidden state after the final norm; `reorder(rows, length)`
    makes row `i` continue the history of row `rows[i]` (beam search).

    Norms, embeddings and the residual wiring are the layers' own; projections go through `packed_linear`, and
    attention is written out for one query per row, as `eager_attention_forward` computes it.
    """

    def __init__(self, model, encoder_hidden_states, attention_mask, num_beams: int, max_length: int):
        self.decoder = model.get_decoder()
        self.layers = list(self.decoder.layers)
        batch, source_length, _ = encoder_hidden_states.shape
        self.batch, self.num_beams, self.rows = batch, num_beams, batch * num_beams
        first = self.layers[0].self_attn
        self.heads, self.head_dim, self.scaling = first.num_heads, first.head_dim, first.scaling
        if self.decoder.position_embedding_type != "rope" and max_length > model.config.max_position_embeddings:
            raise ValueError(
                f"Generating {max_length} decoder positions exceeds max_position_embeddings="
                f"{model.config.max_position_embeddings} of this {self.decoder.position_embedding_type} position "
                "table; lower max_new_tokens."
            )
        dtype, device = encoder_hidden_states.dtype, encoder_hidden_states.device
        self.device, self.vocab_size = device, model.lm_head.out_features
        linear = functools.partial(packed_linear, rows=self.rows)
        self.lm_head = linear(model.lm_head)
        self.projections = [
            dict(
                qkv=linear(layer.self_attn.qkv_proj),
                self_out=linear(layer.self_attn.out_proj),
                q=linear(layer.encoder_attn.q_proj),
                cross_out=linear(layer.encoder_attn.out_proj),
                fc1=linear(layer.mlp.fc1),
                fc2=linear(layer.mlp.fc2),
            )
            for layer in self.layers
        ]
        # Self-attention cache: (rows, heads, max_length, head_dim) per layer, keys and values.
        shape = (self.rows, self.heads, max_length, self.head_dim)
        self.keys = [torch.empty(shape, dtype=dtype, device=device) for _ in self.layers]
        self.values = [torch.empty(shape, dtype=dtype, device=device) for _ in self.layers]
        self.spare = None  # second set of buffers for beam reordering, made on first use
        # Cross-attention keys/values from the source, once per sentence (not per beam): (batch, heads, src, head_dim).
        self.cross = []
        for layer in self.layers:
            kv = layer.encoder_attn.kv_proj(encoder_hidden_states).view(batch, source_length, 2, self.heads, -1)
            self.cross.append(kv.permute(2, 0, 3, 1, 4).contiguous().unbind(0))
        # Additive source mask (batch, 1, 1, source), as the eager attention masks padding.
        self.source_bias = torch.zeros(batch, 1, 1, source_length, dtype=dtype, device=device)
        self.source_bias.masked_fill_(~attention_mask.bool()[:, None, None, :], torch.finfo(dtype).min)

    def step(self, tokens: torch.LongTensor, position: int) -> torch.Tensor:
        position_ids = torch.full((1, 1), position, dtype=torch.long, device=tokens.device)
        hidden_states, rotary = self.decoder.embed(tokens[:, None], None, position_ids, seq_end=position + 1)
        hidden_states = hidden_states[:, 0]  # (rows, d_model)
        for index, layer in enumerate(self.layers):
            hidden_states = self.layer_step(index, layer, hidden_states, position, rotary)
        return self.decoder.layer_norm(hidden_states)

    def layer_step(self, index: int, layer, hidden_states, position: int, rotary) -> torch.Tensor:
        proj, keys, values = self.projections[index], self.keys[index], self.values[index]
        cross_keys, cross_values = self.cross[index]

        def self_attention(x):
            query, key, value = proj["qkv"](x).view(self.rows, 3, self.heads, 1, self.head_dim).unbind(1)
            if rotary is not None:
                query, key = apply_rotary_pos_emb(query, key, *rotary)
            keys[:, :, position : position + 1] = key
            values[:, :, position : position + 1] = value
            out = self.attend(query, keys[:, :, : position + 1], values[:, :, : position + 1])
            return proj["self_out"](out.view(self.rows, -1))

        def cross_attention(x):
            # The beams of a sentence are one block of queries against that sentence's source.
            query = proj["q"](x).view(self.batch, self.num_beams, self.heads, self.head_dim).transpose(1, 2)
            out = self.attend(query, cross_keys, cross_values, self.source_bias)
            return proj["cross_out"](out.transpose(1, 2).reshape(self.rows, -1))

        def feed_forward(x):
            return proj["fc2"](layer.mlp.activation_fn(proj["fc1"](x)))

        hidden_states = layer.residual(layer.self_attn_layer_norm, self_attention, hidden_states)
        hidden_states = layer.residual(layer.encoder_attn_layer_norm, cross_attention, hidden_states)
        return layer.residual(layer.final_layer_norm, feed_forward, hidden_states)

    def attend(self, query, keys, values, bias=None):
        """softmax(q k^T * scaling + bias) v, as `eager_attention_forward`; for a handful of queries per sequence
        this beats SDPA's fused kernel, whose set-up costs more than the arithmetic."""
        scores = torch.matmul(query, keys.transpose(-1, -2)) * self.scaling
        if bias is not None:
            scores = scores + bias
        return torch.matmul(scores.softmax(-1, dtype=torch.float32).to(query.dtype), values)

    def logits(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return self.lm_head(hidden_states).float()

    def reorder(self, rows: torch.LongTensor, length: int):
        """Gather the first `length` cached positions of `rows` into a spare buffer and swap it in: one copy, where
        reordering in place takes two."""
        if self.spare is None:
            self.spare = [torch.empty_like(cache) for cache in (*self.keys, *self.values)]
        caches = [*self.keys, *self.values]
        for cache, spare in zip(caches, self.spare):
            torch.index_select(cache[:, :, :length], 0, rows, out=spare[:, :, :length])
        self.keys, self.values = self.spare[: len(self.keys)], self.spare[len(self.keys) :]
        self.spare = caches


_PACKED: "weakref.WeakKeyDictionary[nn.Linear, tuple]" = weakref.WeakKeyDictionary()


def packed_linear(module: nn.Module, rows: int) -> Callable[[torch.Tensor], torch.Tensor]:
    """`module` as a function of its input. A float32 `nn.Linear` on an MKL CPU build multiplies by its weight packed
    once into MKL's GEMM layout (cached until the weight changes): bit-identical to `module(x)` and 1.3-1.6x faster on
    the few-row products of decoding, where plain `sgemm` repacks the weight on every call."""
    weight = getattr(module, "weight", None)
    if not (
        type(module) in (nn.Linear, ZhenLinear)  # not subclasses that change forward (LoRA, int8)
        and weight.dtype == torch.float32
        and weight.device.type == "cpu"
        and torch.backends.mkl.is_available()
        and hasattr(torch.ops.mkl, "_mkl_linear")
    ):
        return module
    key = (weight.data_ptr(), None if weight.is_inference() else weight._version, rows)  # packing depends on rows
    if module not in _PACKED or _PACKED[module][0] != key:
        _PACKED[module] = (key, torch.ops.mkl._mkl_reorder_linear_weight(weight.detach(), rows))
    packed, bias = _PACKED[module][1], module.bias
    return lambda x: torch.ops.mkl._mkl_linear(x, packed, weight, bias, rows)


def release_packed_weights():
    """Free the packed copies `packed_linear` keeps (about 1.4x the decoder and LM-head weights) until their module
    is deleted or its weight changes."""
    _PACKED.clear()


def argmax(scores: torch.Tensor, chunk: int = 64) -> torch.LongTensor:
    """`scores.argmax(-1)` for 2-D float scores (ties: the first index), via a fast `amax` over chunks: the first chunk
    holding the maximum holds its first occurrence. CPU `argmax` is several times slower than `amax`."""
    rows, vocab = scores.shape
    if vocab < 4 * chunk or scores.device.type != "cpu":
        return scores.argmax(-1)
    blocks = _pad_to_multiple(scores, chunk).view(rows, -1, chunk)
    best_block = blocks.amax(-1).argmax(-1)
    within = blocks[torch.arange(rows, device=scores.device), best_block].argmax(-1)
    return best_block * chunk + within


def topk(scores: torch.Tensor, k: int, chunk: int = 64) -> tuple[torch.Tensor, torch.LongTensor]:
    """`torch.topk(scores, k)` for 2-D scores: the top k of each row lie in the k chunks with the largest maxima, so
    only those are sorted. Same values in the same (descending) order; CPU `topk` over long rows is slow."""
    rows, width = scores.shape
    if width < 4 * k * chunk or scores.device.type != "cpu":
        return torch.topk(scores, k)
    scores = _pad_to_multiple(scores, chunk)
    blocks = scores.view(rows, -1, chunk)
    best_blocks = torch.topk(blocks.amax(-1), k).indices.sort(-1).values  # in index order, like a full scan
    candidates = (best_blocks[:, :, None] * chunk + torch.arange(chunk, device=scores.device)).view(rows, -1)
    values, positions = torch.topk(scores.gather(1, candidates), k)
    return values, candidates.gather(1, positions)


def _forced_token(cur_len: int, max_length: int, forced_bos, forced_eos) -> int | None:
    """The token `ForcedBOSTokenLogitsProcessor` / `ForcedEOSTokenLogitsProcessor` force at this step (EOS wins)."""
    if forced_eos is not None and cur_len == max_length - 1:
        return forced_eos
    return forced_bos if cur_len == 1 else None


def greedy_search(decoder: StaticCacheDecoder, batch: int, eos, pad, start, forced_bos, forced_eos, min_new_tokens,
                  max_length) -> torch.LongTensor:  # fmt: skip
    """Argmax decoding; rows that produced `</s>` continue with padding until all have, as in `generate`."""
    pad = eos if pad is None else pad
    device = decoder.device
    sequences = torch.full((batch, max_length), start, dtype=torch.long, device=device)
    unfinished = torch.ones(batch, dtype=torch.bool, device=device)
    length = max_length
    for cur_len in range(1, max_length):
        hidden_states = decoder.step(sequences[:, cur_len - 1], cur_len - 1)
        forced = _forced_token(cur_len, max_length, forced_bos, forced_eos)
        if forced is not None:
            tokens = torch.full((batch,), forced, dtype=torch.long, device=device)
        else:
            logits = decoder.logits(hidden_states)
            if eos is not None and cur_len - 1 < min_new_tokens:
                logits[:, eos] = -math.inf
            tokens = argmax(logits)
        if eos is not None:
            tokens = torch.where(unfinished, tokens, pad)
            unfinished &= tokens != eos
        sequences[:, cur_len] = tokens
        if eos is not None and not unfinished.any():
            length = cur_len + 1
            break
    return sequences[:, :length]


def beam_search(decoder: StaticCacheDecoder, batch: int, num_beams: int, length_penalty: float,
                early_stopping: bool | str, num_return_sequences: int, eos, pad, start, forced_bos, forced_eos,
                min_new_tokens, max_length) -> torch.LongTensor:  # fmt: skip
    """Transformers' vectorised beam search (`GenerationMixin._beam_search`), step for step: keep the top
    `2 * num_beams` continuations, continue the best `num_beams` unfinished ones, move finished ones into a
    `num_beams`-slot set scored by `log p / length**length_penalty`, and stop by the same heuristic."""
    device = decoder.device
    B, K = batch, num_beams
    keep = 2 * K  # (1 + number of eos ids) * num_beams candidates: enough to continue K beams if K of them end
    is_top_k = (torch.arange(keep, device=device) < K)[None]
    fill = (pad or eos) if eos is not None else -1  # Transformers' `pad_token_id or eos_token_id[0]`
    running = torch.full((B, K, max_length), fill, dtype=torch.long, device=device)
    running[:, :, 0] = start
    finished_sequences = running.clone()
    running_scores = torch.zeros((B, K), device=device)
    running_scores[:, 1:] = -1e9  # only the first beam's continuations count at the first step
    finished_scores = torch.full((B, K), -1e9, device=device)
    finished_lengths = torch.zeros((B, K), dtype=torch.long, device=device)
    is_finished = torch.zeros((B, K), dtype=torch.bool, device=device)
    can_improve = torch.ones((B, 1), dtype=torch.bool, device=device)
    row_offset = torch.arange(B, device=device)[:, None] * K

    for cur_len in range(1, max_length):
        hidden_states = decoder.step(running[:, :, cur_len - 1].reshape(-1), cur_len - 1)
        forced = _forced_token(cur_len, max_length, forced_bos, forced_eos)
        if forced is not None:
            log_probs = torch.full((B * K, decoder.vocab_size), -math.inf, device=device)
            log_probs[:, forced] = 0
        else:
            log_probs = nn.functional.log_softmax(decoder.logits(hidden_states), dim=-1)
            if eos is not None and cur_len - 1 < min_new_tokens:
                log_probs[:, eos] = -math.inf
        vocab = log_probs.shape[-1]
        log_probs = log_probs.view(B, K, vocab).add_(running_scores[:, :, None]).view(B, K * vocab)

        # Top `keep` continuations over all beams of each sentence.
        top_scores, top_indices = topk(log_probs, keep)
        top_beams, top_tokens = top_indices // vocab, top_indices % vocab
        top_sequences = torch.take_along_dim(running, top_beams[:, :, None], dim=1)
        top_sequences[:, :, cur_len] = top_tokens
        ends = top_tokens == eos if eos is not None else torch.zeros_like(top_tokens, dtype=torch.bool)
        if cur_len + 1 >= max_length:
            ends = torch.ones_like(ends)

        # The best K that did not end continue.
        continuing_scores = top_scores + ends.to(torch.float32) * -1.0e9
        best = torch.topk(continuing_scores, k=K)[1]
        running = torch.take_along_dim(top_sequences, best[:, :, None], dim=1)
        running_scores = torch.take_along_dim(continuing_scores, best, dim=1)
        parent_rows = (torch.take_along_dim(top_beams, best, dim=1) + row_offset).view(-1)

        # Those among the top K that ended compete for the K finished slots.
        just_finished = ends & is_top_k
        scores = top_scores / (cur_len**length_penalty)
        scores += (torch.all(is_finished, dim=-1, keepdim=True) & (early_stopping is True)).to(torch.float32) * -1.0e9
        scores += (~can_improve).to(torch.float32) * -1.0e9
        scores += (~just_finished) * -1.0e9
        merged_scores = torch.cat((finished_scores, scores), dim=1)
        slots = torch.topk(merged_scores, k=K)[1]
        finished_scores = torch.take_along_dim(merged_scores, slots, dim=1)
        finished_sequences = torch.take_along_dim(
            torch.cat((finished_sequences, top_sequences), dim=1), slots[:, :, None], dim=1
        )
        finished_lengths = torch.take_along_dim(
            torch.cat((finished_lengths, torch.full_like(top_tokens, cur_len)), dim=1), slots, dim=1
        )
        is_finished = torch.take_along_dim(torch.cat((is_finished, just_finished), dim=1), slots, dim=1)

        # Stop once no sentence can improve its finished set (Transformers' heuristic), or nothing can continue.
        next_len = cur_len + 1
        best_length = max_length - 1 if early_stopping == "never" and length_penalty > 0.0 else next_len - 1
        best_running = running_scores[:, :1] / (best_length**length_penalty)
        worst_finished = torch.where(is_finished, torch.min(finished_scores, dim=1, keepdim=True)[0], -1.0e9)
        can_improve = can_improve & torch.any(best_running > worst_finished, dim=-1, keepdim=True)
        if not (can_improve.any() and not (is_finished.all() and early_stopping is True) and not ends.all()):
            break
        decoder.reorder(parent_rows, cur_len)

    sequences = finished_sequences[:, :num_return_sequences].reshape(B * num_return_sequences, max_length)
    length = 1 + int(finished_lengths[:, :num_return_sequences].max())
    return sequences[:, :length]


def _pad_to_multiple(scores: torch.Tensor, multiple: int) -> torch.Tensor:
    missing = -scores.shape[-1] % multiple
    return nn.functional.pad(scores, (0, missing), value=-math.inf) if missing else scores


__all__ = [
    "generate",
    "unsupported_options",
    "greedy_search",
    "beam_search",
    "StaticCacheDecoder",
    "packed_linear",
    "argmax",
    "topk",
]
