# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""Greedy search of one sentence, or a few in step, with drafted tokens (speculative decoding, Leviathan et al. 2023,
with the model's own int8 copy as the draft).

A step of one sentence multiplies a single row by every weight of the decoder: at transformer-base width on a CPU
it runs at the memory's rate, and checking several tokens costs little more than one. An int8 copy of the decoder
and LM head, which reads a quarter of the bytes, proposes the next few tokens one step at a time ([`DraftLength`]); the
float32 model then computes all of them in one pass ([`zhen.decoder_steps.DecoderSteps.steps`]) and keeps the
drafted tokens it would have chosen itself, followed by its own choice after them. The output is float32 greedy
search's (up to float32 rounding between products of one and of several rows); what drafting changes is how many
passes over the weights it takes.

Beam search is drafted as a tree: the copy runs a few steps of the same beam search, the model computes every
drafted beam of every step in one pass and runs its own beam search over the tree while the beams it keeps are
drafted ones ([`drafted_beam_search`]).
"""

import copy
import itertools
import weakref

import torch
from torch import nn

from .quantization import output_embeddings_name, quantize_parts
from .search import BeamSearch, beam_log_probs, forced_token, run_from
from .weight_stamps import WeightStamp


DRAFT_TOKENS = 4  # drafted tokens a pass of the float32 model checks, at first ([`DraftLength`])
MAX_DRAFT_TOKENS = 8
# Greedy search drafts a call of up to this many texts, its sentences in step: each check keeps only what all of them
# confirm, so more sentences keep fewer tokens a pass (measured: README, Performance).
MAX_DRAFTED_SENTENCES = 4
# Decoder weights (elements) from which drafting pays: below, a step of one row costs its operations more than its
# bytes, int8 or not.
MIN_DECODER_WEIGHTS = 12 << 20
# Calls of a model that drafting would serve (greedy of a few texts, beams of one) before its draft is made: making
# it takes about what this many drafted calls save, so a one-off call (`zhen-translate "..."`) never pays it.
DRAFT_AFTER = 32


def draft_due(model) -> bool:
    """Counting this call, whether `model` has had more than `DRAFT_AFTER` calls that drafting would serve, or has a
    draft."""
    calls = _CALLS[model] = _CALLS.get(model, 0) + 1
    return calls > DRAFT_AFTER or model in _DRAFTS


def drafting_pays(decoder_weights: int) -> bool:
    """Whether a decoder of `decoder_weights` weights in its linears ([`zhen.fast_generation.decoder_weights`]) is
    large enough that drafting saves more than it costs (`MIN_DECODER_WEIGHTS`)."""
    return decoder_weights >= MIN_DECODER_WEIGHTS


def int8_draft(model, originals: dict[int, nn.Module] | None = None) -> nn.Module:
    """The draft of `model`: a copy whose decoder projections (but the source's keys and values, which it takes from
    `model`: [`zhen.fast_generation.FastDecoder.draft_steps`]) and LM head are dynamic int8
    (`zhen.quantization.quantize_dynamic`'s, FBGEMM's also for the head: the faster one for one row), sharing every
    other weight with `model`; made from `model`'s own modules where a decoding session swapped others in
    (`originals`: the own module by the id of the one in its place). Kept for `model`'s later calls while the weights
    it copies stay as they are."""
    originals = originals or {}
    head = model.get_output_embeddings()
    names = _drafted_linears(model, originals)
    weights = [module.weight for module in names.values()] + [originals.get(id(head), head).weight]
    kept = _DRAFTS.get(model)
    if kept is not None and WeightStamp.all_match(kept[0], weights):
        return kept[1]
    shared = {id(tensor): tensor for tensor in itertools.chain(model.parameters(), model.buffers())}
    for module_id, original in originals.items():
        shared[module_id] = copy.deepcopy(original, shared)
    draft = copy.deepcopy(model, shared).eval()
    parts = [*names, output_embeddings_name(draft)]
    quantize_parts(draft, parts, onednn_head=False, onednn_batches=False, few_rows=True)  # a few rows a step
    draft.draft_length, draft.beam_draft_length = DraftLength(), DraftLength()
    _DRAFTS[model] = [WeightStamp(weight) for weight in weights], draft
    return draft


def _drafted_linears(model, originals: dict[int, nn.Module]) -> dict[str, nn.Module]:
    """The decoder's own `nn.Linear`s a draft quantizes, by name in the model: in a session, found among the modules
    that the ones swapped in replace (`originals`), a module swapped in whole (a bf16 session's ReLU MLP) included."""
    decoder = model.get_decoder()
    prefix = next(name for name, module in model.named_modules() if module is decoder)
    return {
        name: module
        for name, module in _own_modules(decoder, originals, prefix)
        if type(module) is nn.Linear and not name.endswith(".kv_proj")
    }


def _own_modules(module: nn.Module, originals: dict[int, nn.Module], name: str):
    """`(name, module)` for `module` and everything under it as it was before a session swapped its own in."""
    module = originals.get(id(module), module)
    yield name, module
    for child_name, child in module._modules.items():
        yield from _own_modules(child, originals, f"{name}.{child_name}")


_DRAFTS: "weakref.WeakKeyDictionary[nn.Module, tuple]" = weakref.WeakKeyDictionary()
_CALLS: "weakref.WeakKeyDictionary[nn.Module, int]" = weakref.WeakKeyDictionary()


class DraftLength:
    """How many tokens to draft for the next check: Transformers' schedule for assisted generation
    (`num_assistant_tokens_schedule="heuristic"`), two more after a check that kept them all, one fewer after one
    that did not, between 1 and `MAX_DRAFT_TOKENS`. A draft that is often wrong costs a step of the draft a check;
    one that is right checks more tokens a pass. Kept with the draft, across calls ([`int8_draft`])."""

    def __init__(self):
        self.tokens = DRAFT_TOKENS

    def update(self, drafted: int, kept: int):
        self.tokens = min(MAX_DRAFT_TOKENS, self.tokens + 2) if kept == drafted else max(1, self.tokens - 1)


def drafted_greedy_search(target, draft, eos, pad, start, forced_bos, forced_eos, min_new_tokens, max_length,
                          draft_length: DraftLength | None = None, batch: int = 1) -> torch.LongTensor:  # fmt: skip
    """`zhen.search.greedy_search` of a batch of a few sentences (`batch`), `target`'s steps checking `draft`'s
    tokens (both `DecoderSteps` of the same source), as many a check as `draft_length` says (a new [`DraftLength`] by
    default). The sentences go in step: a check keeps the drafted tokens that the model's own choices confirm in every
    unfinished sentence, then the model's next ones. A forced token costs no step (the next pass computes its
    position); a step whose `</s>` is banned, and the last before a forced `</s>`, are the target's alone. Rows that
    produced `</s>` are padded until all have, as in `generate`. Returns `(batch, length)`: the start token and the
    generated ones."""
    draft_length = draft_length or DraftLength()
    pad = eos if pad is None else pad
    sequences = torch.full((batch, max_length), start if pad is None else pad, dtype=torch.long, device=target.device)
    sequences[:, 0] = start
    unfinished = [True] * batch
    length = 1
    checked = drafted = 0  # positions whose keys and values the target's / the draft's cache holds
    while length < max_length:
        forced = forced_token(length, max_length, forced_bos, forced_eos)
        banned = eos if eos is not None and length - 1 < min_new_tokens else None
        room = max_length - 1 - length - (forced_eos is not None)
        tokens = sequences[:, :length]
        if forced is not None:
            new = [[forced]] * batch
        elif banned is not None or room < 1:
            new = target.next_tokens(last_states(target, tokens, checked, 1), banned)[:, None].tolist()
            checked = length
        else:
            guesses = draft_next(draft, tokens, drafted, min(draft_length.tokens, room), eos, unfinished)
            count = guesses.shape[1]
            chosen = target.next_tokens(last_states(target, torch.cat([tokens, guesses], 1), checked, count + 1))
            chosen = chosen.view(batch, count + 1).tolist()
            kept = [_confirmed(row, own) for row, own, going in zip(guesses.tolist(), chosen, unfinished) if going]
            accepted = min(kept, default=count)
            new = [own[: accepted + 1] for own in chosen]
            draft_length.update(count, accepted)
            checked, drafted = length + accepted, min(length - 1 + count, length + accepted)
        columns = []
        for column in zip(*new):
            if eos is not None:
                column = [token if going else pad for token, going in zip(column, unfinished)]
                unfinished = [going and token != eos for token, going in zip(column, unfinished)]
            columns.append(column)
            if not any(unfinished):
                break
        sequences[:, length : length + len(columns)] = torch.tensor(columns, device=target.device).t()
        length += len(columns)
        if not any(unfinished):
            break
    return sequences[:, :length]


def _confirmed(guesses: list[int], chosen: list[int]) -> int:
    """How many of a row's drafted tokens the model's own choices confirm, from the first on."""
    return next((i for i, (guess, own) in enumerate(zip(guesses, chosen)) if guess != own), len(guesses))


def drafted_beam_search(target, draft, num_beams: int, length_penalty: float, early_stopping: bool | str,
                        num_return_sequences: int, eos, pad, start, forced_bos, forced_eos, min_new_tokens,
                        max_length, draft_length: DraftLength | None = None) -> torch.LongTensor:  # fmt: skip
    """`zhen.search.beam_search` of a batch of one sentence, `target`'s steps checking a tree of `draft`'s
    beams (both `DecoderSteps` of the same source with `num_beams` beams). From the search's beams, the draft runs
    `draft_length.tokens` steps of the same beam search on its own log-probabilities; the model computes the tree of
    its beams in one pass (level `j`'s `num_beams` nodes at the position after the search's, [`tree_origins`]) and
    goes on with its own search over the tree while the beams it keeps are nodes of it, then one step more. The
    beams' shared first steps are both models' in one row. Returns what `beam_search` returns."""
    draft_length = draft_length or DraftLength()
    K = num_beams
    search = BeamSearch(target.device, 1, K, length_penalty, early_stopping, eos, pad, start,
                                        max_length)  # fmt: skip
    processors = dict(max_length=max_length, eos=eos, forced_bos=forced_bos, forced_eos=forced_eos,
                      min_new_tokens=min_new_tokens)  # fmt: skip
    first_choice = 2 if forced_token(1, max_length, forced_bos, forced_eos) is not None else 1
    for steps in (target, draft):
        steps.one_row_per_sentence()
    for cur_len in range(1, first_choice + 1):
        hidden_states = None  # a forced first token's position goes with the next pass
        if cur_len == first_choice:
            prefix = search.running[0, 0, :cur_len]
            run_from(draft, prefix, 0)
            hidden_states = run_from(target, prefix, 0)[-1:]
        rows = search.choose(beam_log_probs(target, hidden_states, cur_len, **processors), cur_len)
        if rows is None:
            return search.sequences(num_return_sequences)
    for steps in (target, draft):
        steps.expand(rows // K, first_choice)
    cur_len, lagging = first_choice + 1, None  # lagging: tree nodes the draft did not compute, parents of the beams
    while cur_len < max_length:
        position = cur_len - 1  # of the search's last tokens, the tree's first level
        history = target.cache.origins[:, :position]
        draft.cache.follow(history, position)
        parents, tokens = draft_beams(draft, search, cur_len, min(draft_length.tokens, max_length - cur_len),
                                      lagging, processors)  # fmt: skip
        origins = tree_origins(history, parents)
        logits = target.logits(target.steps(torch.cat([search.last_tokens(cur_len), *tokens]), position, origins))
        found = search_tree(target, search, logits, parents, tokens, cur_len, processors)
        if found is None:
            break
        steps, kept, parent_nodes = found
        draft_length.update(len(tokens), kept)
        target.cache.follow(origins[parent_nodes], position + steps)
        lagging = (tokens[-1], origins[-K:]) if tokens and kept == len(tokens) else None
        cur_len += steps
    return search.sequences(num_return_sequences)


def search_tree(target, search, logits, parents, tokens, cur_len: int, processors: dict):
    """`search`'s own steps from `cur_len` on over a checked tree (`logits`: its nodes', level after level; `parents`,
    `tokens`: the drafted levels, [`draft_beams`]), while the beams it keeps are nodes of the tree, then one step more.
    Returns the steps taken, the drafted levels kept and the tree node each beam continues; None where the search is
    over."""
    K = search.num_beams
    slots = torch.arange(K, device=logits.device)  # the tree node of each beam of the search, in its level
    for level in range(len(tokens) + 1):
        beams_logits = logits.index_select(0, level * K + slots)  # row i: the node of the search's beam i
        log_probs = beam_log_probs(target, None, cur_len + level, logits=beams_logits, **processors)
        rows = search.choose(log_probs, cur_len + level)
        if rows is None:
            return None
        parent_nodes = level * K + slots[rows]
        if level < len(tokens):
            slots = _drafted_slots(parents[level], tokens[level], slots[rows], search.running[0, :, cur_len + level])
        if level == len(tokens) or slots is None:
            return level + 1, level, parent_nodes


def draft_beams(draft, search, cur_len: int, levels: int, lagging, processors: dict):
    """Up to `levels` steps of `search`'s beam search from `cur_len` on by `draft`, on a copy of its state, fewer where
    the draft's search ends (no beam of it can improve its finished set, or all end): for each, the slot each new
    beam continues in the level before and its token, `(beams,)` each. `lagging`: the tokens and tree origins of the
    nodes before the search's last tokens whose keys and values `draft` has not computed."""
    search = copy.copy(search)
    tokens = search.last_tokens(cur_len)
    if lagging is None:
        hidden_states = draft.step(tokens, cur_len - 1)
    else:
        last, origins = lagging
        own = torch.arange(len(tokens), device=tokens.device)[:, None]
        ours = torch.cat([draft.cache.origins[:, : cur_len - 1], own], 1)
        both = torch.cat([torch.cat([origins[:, : cur_len - 1], own], 1), ours])
        hidden_states = draft.steps(torch.cat([last, tokens]), cur_len - 2, both)[len(tokens) :]
    parents, drafted = [], []
    for level in range(levels):
        if level:
            hidden_states = draft.step(drafted[-1], cur_len - 1 + level)
        log_probs = beam_log_probs(draft, hidden_states, cur_len + level, **processors)
        rows = search.choose(log_probs, cur_len + level)
        if rows is None:  # the draft's search is over: the model's would most likely stop here too
            break
        draft.reorder(rows, cur_len + level)
        parents.append(rows)
        drafted.append(search.running[0, :, cur_len + level])
    return parents, drafted


def tree_origins(history: torch.LongTensor, parents: list[torch.LongTensor]) -> torch.LongTensor:
    """Where each node of a tree of beams finds its history in a [`zhen.decoding_cache.LineageCache`]: `history`
    `(beams, position)`, the slots of the beams' histories before the tree; `parents[j]`, the slot in level `j` that
    node `i` of level `j + 1` continues. Returns `(levels * beams, position + levels)`: node `i` of a level in slot
    `i` at its own position (and, past it, where it is not looked at)."""
    beams, levels = len(history), 1 + len(parents)
    own = torch.arange(beams, device=history.device)[:, None].expand(beams, levels)
    nodes = [torch.cat([history, own], 1)]
    for level, rows in enumerate(parents, 1):
        nodes.append(torch.cat([nodes[-1][rows, : history.shape[1] + level], own[:, level:]], 1))
    return torch.cat(nodes)


def _drafted_slots(parents, tokens, beam_slots, beam_tokens) -> torch.LongTensor | None:
    """The slot of each new beam (continuing the node in slot `beam_slots[i]` with `beam_tokens[i]`) among a drafted
    level's nodes (node `s` continues slot `parents[s]` with `tokens[s]`); None where one is not drafted."""
    drafted = {(int(p), int(t)): s for s, (p, t) in enumerate(zip(parents.tolist(), tokens.tolist()))}
    slots = [drafted.get((p, t)) for p, t in zip(beam_slots.tolist(), beam_tokens.tolist())]
    return None if None in slots else torch.tensor(slots, device=beam_slots.device)


def draft_next(draft, tokens: torch.LongTensor, drafted: int, count: int, eos: int | None = None,
               going: list[bool] | None = None) -> torch.LongTensor:  # fmt: skip
    """Up to `count` tokens after each row of `tokens` `(rows, length)`, greedy, from `draft`'s steps, `(rows, count)`
    or fewer columns; the first from one pass over the positions from `drafted` on, which its cache does not hold yet
    (after a check that kept every drafted token: the last of them and the model's own next one). Drafting stops once
    every row still `going` (by default all) has drafted `eos`: no token after a sentence's `</s>` is ever kept."""
    guesses = [draft.next_tokens(last_states(draft, tokens, drafted, 1))]
    open_rows = None if eos is None else torch.tensor(going or [True] * len(tokens), device=tokens.device)
    for position in range(tokens.shape[1], tokens.shape[1] + count - 1):
        if open_rows is not None:
            open_rows &= guesses[-1] != eos
            if not bool(open_rows.any()):
                break
        guesses.append(draft.next_tokens(draft.step(guesses[-1], position)))
    return torch.stack(guesses, 1)


def last_states(steps, tokens: torch.LongTensor, position: int, count: int) -> torch.Tensor:
    """The hidden states of the last `count` positions of each row of `tokens` `(rows, length)`, the decoder's cache
    holding those before `position` ([`zhen.search.run_from`]): `(rows * count, d_model)`, row after row."""
    hidden_states = run_from(steps, tokens, position)
    return hidden_states.view(len(tokens), -1, *hidden_states.shape[1:])[:, -count:].flatten(0, 1)
