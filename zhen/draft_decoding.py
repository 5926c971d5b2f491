# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""Greedy search of one sentence with drafted tokens (speculative decoding, Leviathan et al. 2023, with the model's
own int8 copy as the draft).

A step of one sentence multiplies a single row by every weight of the decoder: at transformer-base width on a CPU
it runs at the memory's rate, and checking several tokens costs about what one costs. An int8 copy of the decoder
and LM head, which reads a quarter of the bytes, proposes the next `DRAFT_TOKENS` tokens one step at a time; the
float32 model then computes all of them in one pass ([`zhen.fast_generation.DecoderSteps.steps`]) and keeps the
drafted tokens it would have chosen itself, followed by its own choice after them. The output is float32 greedy
search's (up to float32 rounding between products of one and of several rows); what drafting changes is how many
passes over the weights it takes.
"""

import copy
import itertools
import weakref

import torch
from torch import nn

from . import fast_generation
from .quantization import quantize_parts


DRAFT_TOKENS = 4  # drafted tokens a pass of the float32 model checks
# Decoder weights (elements) from which a step of one row reads more than the caches keep, and drafting pays.
MIN_DECODER_WEIGHTS = 12 << 20


def drafting_pays(model) -> bool:
    """Whether `model`'s decoder is large enough that drafting saves more than it costs (`MIN_DECODER_WEIGHTS`)."""
    decoder = model.get_decoder()
    weights = sum(m.weight.numel() for m in decoder.modules() if type(m) is nn.Linear)
    return weights >= MIN_DECODER_WEIGHTS


def int8_draft(model, originals: dict[int, nn.Module] | None = None) -> nn.Module:
    """The draft of `model`: a copy whose decoder projections and LM head are dynamic int8
    (`zhen.quantization.quantize_dynamic`'s), sharing every other weight (embeddings, norms, the encoder) with
    `model`; made from `model`'s own modules where a decoding session swapped others in (`originals`: the own module
    by the id of the one in its place). Kept for `model`'s later calls while the decoder's and the head's weights
    stay as they are."""
    originals = originals or {}
    head = model.get_output_embeddings()
    linears = [m for m in model.get_decoder().modules() if type(m) is nn.Linear]  # a session's hold them too
    weights = [m.weight for m in (*linears, originals.get(id(head), head))]
    kept = _DRAFTS.get(model)
    if kept is not None and fast_generation.WeightStamp.all_match(kept[0], weights):
        return kept[1]
    shared = {id(tensor): tensor for tensor in itertools.chain(model.parameters(), model.buffers())}
    for module_id, original in originals.items():
        shared[module_id] = copy.deepcopy(original, shared)
    draft = copy.deepcopy(model, shared).eval()
    names = {module: name for name, module in draft.named_modules()}
    quantize_parts(draft, [names[draft.get_decoder()], names[draft.get_output_embeddings()]])
    _DRAFTS[model] = [fast_generation.WeightStamp(weight) for weight in weights], draft
    return draft


_DRAFTS: "weakref.WeakKeyDictionary[nn.Module, tuple]" = weakref.WeakKeyDictionary()


def drafted_greedy_search(target, draft, eos, pad, start, forced_bos, forced_eos, min_new_tokens,
                          max_length) -> torch.LongTensor:  # fmt: skip
    """`zhen.fast_generation.greedy_search` of a batch of one sentence, `target`'s steps checking `draft`'s tokens
    (both `DecoderSteps` of the same source). Steps whose token is forced or whose `</s>` is banned, and the last one
    before a forced `</s>`, are the target's alone. Returns `(1, length)`: the start token and the generated ones."""
    tokens = [start]
    drafted = 0  # positions of `tokens` whose keys and values the draft's cache holds
    while len(tokens) < max_length:
        length = len(tokens)
        forced = fast_generation._forced_token(length, max_length, forced_bos, forced_eos)
        banned = eos if eos is not None and length - 1 < min_new_tokens else None
        room = max_length - 1 - length - (forced_eos is not None)
        if forced is not None or banned is not None or room < 1:
            hidden_states = target.step(_tensor([tokens[-1]], target), length - 1)
            new = [forced if forced is not None else int(target.next_tokens(hidden_states, banned)[0])]
        else:
            guesses = draft_next(draft, tokens, drafted, min(DRAFT_TOKENS, room))
            hidden_states = target.steps(_tensor([tokens[-1], *guesses], target), length - 1)
            chosen = target.next_tokens(hidden_states).tolist()
            accepted = next((i for i, (guess, own) in enumerate(zip(guesses, chosen)) if guess != own), len(guesses))
            new = [*guesses[:accepted], chosen[accepted]]
            drafted = min(length - 1 + len(guesses), length + accepted)
        for token in new:
            tokens.append(token)
            if token == eos:
                return _tensor(tokens, target)[None]
    return _tensor(tokens, target)[None]


def draft_next(draft, tokens: list[int], drafted: int, count: int) -> list[int]:
    """`count` tokens after `tokens`, greedy, from `draft`'s steps: first over the positions from `drafted` on that
    its cache does not hold yet."""
    for position in range(drafted, len(tokens) - 1):
        draft.step(_tensor([tokens[position]], draft), position)
    guesses, last = [], tokens[-1]
    for position in range(len(tokens) - 1, len(tokens) - 1 + count):
        last = int(draft.next_tokens(draft.step(_tensor([last], draft), position))[0])
        guesses.append(last)
    return guesses


def _tensor(tokens: list[int], steps) -> torch.LongTensor:
    return torch.tensor(tokens, dtype=torch.long, device=steps.device)
