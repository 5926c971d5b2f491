# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""Greedy and beam search over a decoder's steps, as Transformers' `generate` runs them, step for step.

A decoder here is whatever computes the steps: `zhen.decoder_steps.DecoderSteps` (a session's decoder and its
cache), a draft's (`zhen.draft_decoding`) or a tail pool's (`zhen.pooled_tails`). Search asks it for the hidden
states of the next position of each running row (`step`, or `steps` for several positions at once), for the next
tokens or the logits from them (`next_tokens`, `logits`), and tells it which rows go on (`keep`, `reorder`, `expand`).
What differs from `generate` is around the model: no logits processors, stopping criteria or masks; finished rows
(greedy) and sentences (beam search) leave the batch once they are `DROP_FINISHED_SHARE` of it; argmax and top-k from
block maxima ([`argmax`], [`topk`], [`top_continuations`]: CPU `argmax`/`topk` over a 32k vocabulary are several
times slower than `amax`).
"""

import math

import torch
from torch import nn


# Finished rows (greedy) or sentences (beam search) leave the decoder once they are this share of those it runs:
# dropping them costs a copy of the cache, each step after it saves their share (math.inf: never).
DROP_FINISHED_SHARE = 0.25
FEW_ROWS_ARGMAX = 4  # greedy search's argmax of this few rows: PyTorch's own ([`argmax`])


def argmax(scores: torch.Tensor, chunk: int = 64) -> torch.LongTensor:
    """`scores.argmax(-1)` for 2-D float scores (ties: the first index), via a fast `amax` over chunks: the first chunk
    holding the maximum holds its first occurrence. CPU `argmax` is several times slower than `amax`, but for up to
    `FEW_ROWS_ARGMAX` rows, where the chunks' five operations cost more than it."""
    rows, vocab = scores.shape
    if rows <= FEW_ROWS_ARGMAX or vocab < 4 * chunk or scores.device.type != "cpu":
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


def top_continuations(log_probs: torch.Tensor, running_scores: torch.Tensor, k: int,
                      chunk: int = 64) -> tuple[torch.Tensor, torch.LongTensor, torch.LongTensor]:  # fmt: skip
    """Beam search's top `k` continuations of each sentence: `topk` over `log_probs[beam] + running_scores[beam]`
    for all its beams and tokens, as values, beams and tokens. `log_probs`: `(batch * beams, vocab)`, or `(batch,
    vocab)` where the beams of a sentence still share one history. Adding a beam's score keeps the order of its
    log-probabilities, so the top `k` sums lie in the `k` chunks whose maxima plus their beam's score are the largest
    ([`topk`]): only the chunks' maxima and the candidates are added to, not the whole `log_probs`."""
    batch, beams = running_scores.shape
    rows, vocab = log_probs.shape
    if beams * vocab < 4 * k * chunk or log_probs.device.type != "cpu":
        if rows == batch:
            log_probs = log_probs.repeat_interleave(beams, dim=0)
        scores = log_probs.view(batch, beams, vocab) + running_scores[:, :, None]
        values, indices = torch.topk(scores.view(batch, beams * vocab), k)
        return values, indices // vocab, indices % vocab
    log_probs = _pad_to_multiple(log_probs, chunk)
    maxima = log_probs.view(batch, rows // batch, -1, chunk).amax(-1) + running_scores[:, :, None]
    chunks = maxima.shape[-1]
    best = torch.topk(maxima.view(batch, -1), k).indices.sort(-1).values  # in index order, like a full scan
    beam, columns = best // chunks, (best % chunks)[:, :, None] * chunk + torch.arange(chunk, device=best.device)
    row = torch.arange(batch, device=best.device)[:, None] * (rows // batch) + (beam if rows > batch else 0)
    sums = log_probs.take(row[:, :, None] * log_probs.shape[1] + columns) + running_scores.gather(1, beam)[:, :, None]
    values, positions = torch.topk(sums.view(batch, -1), k)
    return values, beam.gather(1, positions // chunk), columns.view(batch, -1).gather(1, positions)


def run_from(decoder, tokens: torch.LongTensor, position: int) -> torch.Tensor:
    """The hidden states after `tokens[..., position:]` at their positions, the decoder's cache holding those before:
    one step, or one pass over several (`zhen.decoder_steps.DecoderSteps.steps`). `tokens`: a batch of one
    sentence `(length,)`, or of one row a sentence `(rows, length)`; returns `(rows * positions, d_model)`, row after
    row."""
    if position == tokens.shape[-1] - 1:
        return decoder.step(tokens[..., -1].reshape(-1), position)
    return decoder.steps(tokens[..., position:], position)


def forced_token(cur_len: int, max_length: int, forced_bos, forced_eos) -> int | None:
    """The token `ForcedBOSTokenLogitsProcessor` / `ForcedEOSTokenLogitsProcessor` force at this step (EOS wins)."""
    if forced_eos is not None and cur_len == max_length - 1:
        return forced_eos
    return forced_bos if cur_len == 1 else None


def worth_dropping(finished: int, running: int) -> bool:
    return finished > 0 and finished >= DROP_FINISHED_SHARE * running


def greedy_search(decoder, batch: int, eos, pad, start, forced_bos, forced_eos, min_new_tokens,
                  max_length, pool=None) -> torch.LongTensor:  # fmt: skip
    """Argmax decoding; rows that produced `</s>` are padded until all have, as in `generate`. Unlike `generate`, the
    decoder stops computing finished rows: it drops them once they are `DROP_FINISHED_SHARE` of those it runs; and in
    a batch of one sentence a forced token costs no pass of its own (the next pass computes its position too). With
    a `pool`, the batch's tail is parked there when the pool takes it ([`zhen.pooled_tails.TailPool.takes`]): the
    output comes back uncut, its running rows to be written by the pool."""
    pad = eos if pad is None else pad
    device = decoder.device
    sequences = torch.full((batch, max_length), start if pad is None else pad, dtype=torch.long, device=device)
    sequences[:, 0] = start
    active = torch.arange(batch, device=device)  # the rows of `sequences` the decoder runs
    unfinished = torch.ones(batch, dtype=torch.bool, device=device)
    length = max_length
    skips_forced = batch == 1 and getattr(
        decoder, "passes_several", False
    )  # a forced token's position goes with the next pass
    computed = 0  # positions whose keys and values the decoder holds
    for cur_len in range(1, max_length):
        forced = forced_token(cur_len, max_length, forced_bos, forced_eos)
        if forced is None or not skips_forced:
            if computed < cur_len - 1:
                hidden_states = run_from(decoder, sequences[0, :cur_len], computed)[-1:]
            else:
                hidden_states = decoder.step(sequences[active, cur_len - 1], cur_len - 1)
            computed = cur_len
        if forced is not None:
            tokens = torch.full((len(active),), forced, dtype=torch.long, device=device)
        else:
            banned = eos if eos is not None and cur_len - 1 < min_new_tokens else None
            tokens = decoder.next_tokens(hidden_states, banned)
        if eos is None:
            sequences[:, cur_len] = tokens
            continue
        tokens = torch.where(unfinished, tokens, pad)
        unfinished &= tokens != eos
        sequences[active, cur_len] = tokens
        running = int(unfinished.sum())
        if running == 0:
            length = cur_len + 1
            break
        if pool is not None and eos is not None and pool.takes(running, batch, cur_len, max_length, min_new_tokens):
            kept = unfinished.nonzero().view(-1)
            decoder.keep(kept, cur_len)
            pool.park(decoder, sequences, active[kept], cur_len, max_length)
            return sequences
        if worth_dropping(len(active) - running, len(active)):
            kept = unfinished.nonzero().view(-1)
            decoder.keep(kept, cur_len)
            active, unfinished = active[kept], unfinished[kept]
    return sequences[:, :length]


def beam_search(decoder, batch: int, num_beams: int, length_penalty: float,
                early_stopping: bool | str, num_return_sequences: int, eos, pad, start, forced_bos, forced_eos,
                min_new_tokens, max_length) -> torch.LongTensor:  # fmt: skip
    """Transformers' vectorised beam search (`GenerationMixin._beam_search`), step for step ([`BeamSearch`]). Unlike
    `generate`, the decoder stops computing the beams of sentences whose finished set can no longer change: it drops
    them once they are `DROP_FINISHED_SHARE` of the sentences it runs."""
    search = BeamSearch(decoder.device, batch, num_beams, length_penalty, early_stopping, eos, pad, start, max_length)
    # Up to the first token chosen, the beams of a sentence have one history: one row per sentence computes it.
    first_choice = 2 if forced_token(1, max_length, forced_bos, forced_eos) is not None else 1
    shared = decoder.shares_first_steps
    if shared:
        decoder.one_row_per_sentence()
    skips_forced = batch == 1 and getattr(
        decoder, "passes_several", False
    )  # a forced first token: its position goes with the next pass
    for cur_len in range(1, max_length):
        shared = shared and cur_len <= first_choice
        if skips_forced and cur_len == 1 < first_choice:
            hidden_states = None
        elif skips_forced and cur_len == 2 == first_choice:
            hidden_states = decoder.steps(search.running[0, 0, :2], 0)[-1:]
        else:
            hidden_states = decoder.step(search.last_tokens(cur_len, shared), cur_len - 1)
        log_probs = beam_log_probs(
            decoder, hidden_states, cur_len, max_length, eos, forced_bos, forced_eos, min_new_tokens
        )
        parent_rows = search.choose(log_probs, cur_len)
        if parent_rows is None:
            break
        if not shared:
            decoder.reorder(parent_rows, cur_len)
        elif cur_len == first_choice:  # the beams' histories part from here on
            decoder.expand(parent_rows // num_beams, cur_len)
        search.drop_done(decoder, cur_len)
    return search.sequences(num_return_sequences)


def beam_log_probs(decoder, hidden_states: torch.Tensor | None, cur_len: int, max_length: int, eos,
                   forced_bos, forced_eos, min_new_tokens: int, logits: torch.Tensor | None = None,
                   ) -> torch.Tensor:  # fmt: skip
    """Beam search's log-probabilities of the next token of each row at `cur_len`: the forced token's alone where one
    is forced (`hidden_states` may then be None: no pass computed them), `</s>` banned until `min_new_tokens`. From
    the rows' `logits` where known (written in place)."""
    rows = (
        decoder.rows if hidden_states is None and logits is None else len(hidden_states if logits is None else logits)
    )
    forced = forced_token(cur_len, max_length, forced_bos, forced_eos)
    if forced is not None:
        log_probs = torch.full((rows, decoder.vocab_size), -math.inf, device=decoder.device)
        log_probs[:, forced] = 0
        return log_probs
    logits = decoder.logits(hidden_states) if logits is None else logits
    log_probs = torch.log_softmax(logits, dim=-1, out=logits)  # in place: no second logits-sized tensor
    if eos is not None and cur_len - 1 < min_new_tokens:
        log_probs[:, eos] = -math.inf
    return log_probs


class BeamSearch:
    """The state of Transformers' vectorised beam search over `batch` sentences of `num_beams` beams: at each step
    ([`choose`]) keep the top `2 * num_beams` continuations, continue the best `num_beams` unfinished ones, move
    finished ones into a `num_beams`-slot set scored by `log p / length**length_penalty`, and stop by the same
    heuristic. `choose` rebinds, never writes, the state's tensors: a shallow copy searches on from the same state
    (a draft's look-ahead, [`zhen.draft_decoding.drafted_beam_search`])."""

    def __init__(self, device, batch: int, num_beams: int, length_penalty: float, early_stopping: bool | str, eos,
                 pad, start, max_length: int):  # fmt: skip
        self.device, self.batch, self.num_beams, self.max_length = device, batch, num_beams, max_length
        self.length_penalty, self.early_stopping, self.eos = length_penalty, early_stopping, eos
        B, K = batch, num_beams
        keep = 2 * K  # (1 + number of eos ids) * num_beams candidates: enough to continue K beams if K of them end
        self.is_top_k = (torch.arange(keep, device=device) < K)[None]
        fill = (pad or eos) if eos is not None else -1  # Transformers' `pad_token_id or eos_token_id[0]`
        self.running = torch.full((B, K, max_length), fill, dtype=torch.long, device=device)
        self.running[:, :, 0] = start
        self.finished_sequences = self.running.clone()
        self.running_scores = torch.zeros((B, K), device=device)
        self.running_scores[:, 1:] = -1e9  # only the first beam's continuations count at the first step
        self.finished_scores = torch.full((B, K), -1e9, device=device)
        self.finished_lengths = torch.zeros((B, K), dtype=torch.long, device=device)
        self.is_finished = torch.zeros((B, K), dtype=torch.bool, device=device)
        self.can_improve = torch.ones((B, 1), dtype=torch.bool, device=device)
        self.row_offset = torch.arange(B, device=device)[:, None] * K
        self.active = torch.arange(B, device=device)  # the sentences the decoder runs; the others' results are final
        self.results, self.result_lengths = self.finished_sequences.clone(), self.finished_lengths.clone()

    def last_tokens(self, cur_len: int, shared: bool = False) -> torch.LongTensor:
        """The tokens at `cur_len - 1` the decoder steps on: one a row, or one a sentence while its beams share it."""
        return self.running[:, 0, cur_len - 1] if shared else self.running[:, :, cur_len - 1].reshape(-1)

    def choose(self, log_probs: torch.Tensor, cur_len: int) -> torch.LongTensor | None:
        """One step at `cur_len` from the rows' `log_probs` ([`beam_log_probs`]): the row each new beam continues
        (`(batch * num_beams,)`), or None where the search is over."""
        parent_rows, top_scores, top_sequences, ends = self.continue_best(log_probs, cur_len)
        # Those among the top K that ended compete for the K finished slots. Where none did, what the merge could
        # move into a slot is a placeholder in place of another (both unfinished at -1e9, neither ever returned: a
        # sentence's search ends only with every slot finished), so it is skipped.
        just_finished = ends & self.is_top_k
        if bool(just_finished.any()):
            self.merge_finished(top_scores, top_sequences, ends, just_finished, cur_len)
        return None if self.over(ends, cur_len) else parent_rows

    def over(self, ends: torch.Tensor, cur_len: int) -> bool:
        """Whether the search stops after `cur_len`: no sentence can improve its finished set (Transformers'
        heuristic), or nothing can continue."""
        length_penalty, early_stopping = self.length_penalty, self.early_stopping
        best_length = self.max_length - 1 if early_stopping == "never" and length_penalty > 0.0 else cur_len
        best_running = self.running_scores[:, :1] / (best_length**length_penalty)
        worst_finished = torch.where(self.is_finished, torch.min(self.finished_scores, dim=1, keepdim=True)[0], -1e9)
        self.can_improve = self.can_improve & torch.any(best_running > worst_finished, dim=-1, keepdim=True)
        full = early_stopping is True and bool(self.is_finished.all())
        return not (self.can_improve.any() and not full and not ends.all())

    def merge_finished(self, top_scores: torch.Tensor, top_sequences: torch.Tensor, ends: torch.Tensor,
                       just_finished: torch.Tensor, cur_len: int):  # fmt: skip
        """The finished half of [`choose`]: the continuations among the top K that ended (`just_finished`) and the
        finished hypotheses so far, the best K of them by `log p / length**length_penalty` kept."""
        K, length_penalty, early_stopping = self.num_beams, self.length_penalty, self.early_stopping
        scores = top_scores / (cur_len**length_penalty)
        all_finished = torch.all(self.is_finished, dim=-1, keepdim=True)
        scores += (all_finished & (early_stopping is True)).to(torch.float32) * -1.0e9
        scores += (~self.can_improve).to(torch.float32) * -1.0e9
        scores += (~just_finished) * -1.0e9
        merged_scores = torch.cat((self.finished_scores, scores), dim=1)
        slots = torch.topk(merged_scores, k=K)[1]
        self.finished_scores = torch.take_along_dim(merged_scores, slots, dim=1)
        self.finished_sequences = torch.take_along_dim(
            torch.cat((self.finished_sequences, top_sequences), dim=1), slots[:, :, None], dim=1
        )
        self.finished_lengths = torch.take_along_dim(
            torch.cat((self.finished_lengths, torch.full_like(ends, cur_len, dtype=torch.long)), dim=1), slots, dim=1
        )
        self.is_finished = torch.take_along_dim(torch.cat((self.is_finished, just_finished), dim=1), slots, dim=1)

    def continue_best(self, log_probs: torch.Tensor, cur_len: int) -> tuple[torch.Tensor, ...]:
        """The running half of [`choose`]: of the top `2 * num_beams` continuations of each sentence, the best
        `num_beams` that did not end go on. Returns the rows they continue, and the continuations' scores, sequences
        and whether they ended, `(batch, 2 * num_beams)`: what the finished set takes from."""
        # Top `keep` continuations over all beams of each sentence.
        top_scores, top_beams, top_tokens = top_continuations(log_probs, self.running_scores, 2 * self.num_beams)
        top_sequences = torch.take_along_dim(self.running, top_beams[:, :, None], dim=1)
        top_sequences[:, :, cur_len] = top_tokens
        ends = top_tokens == self.eos if self.eos is not None else torch.zeros_like(top_tokens, dtype=torch.bool)
        if cur_len + 1 >= self.max_length:
            ends = torch.ones_like(ends)

        # The best K that did not end continue.
        continuing_scores = top_scores + ends.to(torch.float32) * -1.0e9
        best = torch.topk(continuing_scores, k=self.num_beams)[1]
        self.running = torch.take_along_dim(top_sequences, best[:, :, None], dim=1)
        self.running_scores = torch.take_along_dim(continuing_scores, best, dim=1)
        parent_rows = (torch.take_along_dim(top_beams, best, dim=1) + self.row_offset).view(-1)
        return parent_rows, top_scores, top_sequences, ends

    def drop_done(self, decoder, cur_len: int):
        """Sentences that cannot improve (or, with early stopping, are full) keep their finished set from here on:
        the decoder drops them once they are `DROP_FINISHED_SHARE` of those it runs. A search of one sentence has
        nothing to drop: once that sentence is done, [`over`] has ended the search."""
        if self.batch == 1:
            return
        done = ~self.can_improve[:, 0] | (self.is_finished.all(-1) & (self.early_stopping is True))
        if not worth_dropping(int(done.sum()), self.batch):
            return
        self.results[self.active[done]] = self.finished_sequences[done]
        self.result_lengths[self.active[done]] = self.finished_lengths[done]
        kept = (~done).nonzero().view(-1)
        decoder.keep(kept, cur_len)
        self.active, self.batch = self.active[kept], len(kept)
        for name in ("running", "running_scores", "can_improve", "finished_sequences", "finished_scores",
                     "finished_lengths", "is_finished"):  # fmt: skip
            setattr(self, name, getattr(self, name)[kept])
        self.row_offset = torch.arange(self.batch, device=self.device)[:, None] * self.num_beams

    def sequences(self, num_return_sequences: int) -> torch.LongTensor:
        """The best `num_return_sequences` finished hypotheses of each sentence, padded as `generate` pads them."""
        self.results[self.active], self.result_lengths[self.active] = self.finished_sequences, self.finished_lengths
        sequences = self.results[:, :num_return_sequences].reshape(-1, self.max_length)
        length = 1 + int(self.result_lengths[:, :num_return_sequences].max())
        return sequences[:, :length]


def _pad_to_multiple(scores: torch.Tensor, multiple: int) -> torch.Tensor:
    missing = -scores.shape[-1] % multiple
    return nn.functional.pad(scores, (0, missing), value=-math.inf) if missing else scores


__all__ = [
    "BeamSearch",
    "argmax",
    "beam_log_probs",
    "beam_search",
    "forced_token",
    "greedy_search",
    "run_from",
    "top_continuations",
    "topk",
    "worth_dropping",
]
