"""Prototype: beam search's per-step choice (log-softmax .. stop test) as one TorchScript function."""
import math, torch
import zhen.fast_generation as fg
from zhen.fast_generation import _forced_token, _worth_dropping, _pad_to_multiple

def top_continuations(log_probs: torch.Tensor, running_scores: torch.Tensor, k: int, chunk: int = 64):
    batch, beams = running_scores.shape[0], running_scores.shape[1]
    rows, vocab = log_probs.shape[0], log_probs.shape[1]
    if beams * vocab < 4 * k * chunk or log_probs.device.type != "cpu":
        if rows == batch:
            log_probs = log_probs.repeat_interleave(beams, dim=0)
        scores = log_probs.view(batch, beams, vocab) + running_scores[:, :, None]
        values, indices = torch.topk(scores.view(batch, beams * vocab), k)
        return values, torch.div(indices, vocab, rounding_mode="floor"), indices % vocab
    missing = (chunk - vocab % chunk) % chunk
    if missing:
        log_probs = torch.nn.functional.pad(log_probs, [0, missing], value=-math.inf)
    maxima = log_probs.view(batch, rows // batch, -1, chunk).amax(-1) + running_scores[:, :, None]
    chunks = maxima.shape[-1]
    best = torch.topk(maxima.view(batch, -1), k).indices.sort(-1).values
    beam = torch.div(best, chunks, rounding_mode="floor")
    columns = (best % chunks)[:, :, None] * chunk + torch.arange(chunk, device=best.device)
    row = torch.arange(batch, device=best.device)[:, None] * (rows // batch)
    if rows > batch:
        row = row + beam
    sums = log_probs.take(row[:, :, None] * log_probs.shape[1] + columns) + running_scores.gather(1, beam)[:, :, None]
    values, positions = torch.topk(sums.view(batch, -1), k)
    return values, beam.gather(1, torch.div(positions, chunk, rounding_mode="floor")), columns.view(batch, -1).gather(1, positions)


def choose(log_probs: torch.Tensor, running: torch.Tensor, running_scores: torch.Tensor, finished_sequences: torch.Tensor,
           finished_scores: torch.Tensor, finished_lengths: torch.Tensor, is_finished: torch.Tensor, can_improve: torch.Tensor,
           row_offset: torch.Tensor, is_top_k: torch.Tensor, cur_len: int, max_length: int, K: int, eos: int,
           length_penalty: float, early_true: bool, never: bool):
    keep = 2 * K
    top_scores, top_beams, top_tokens = top_continuations(log_probs, running_scores, keep, 64)
    top_sequences = torch.take_along_dim(running, top_beams[:, :, None], dim=1)
    top_sequences[:, :, cur_len] = top_tokens
    if eos >= 0:
        ends = top_tokens == eos
    else:
        ends = torch.zeros_like(top_tokens, dtype=torch.bool)
    if cur_len + 1 >= max_length:
        ends = torch.ones_like(ends)
    continuing_scores = top_scores + ends.to(torch.float32) * -1.0e9
    best = torch.topk(continuing_scores, k=K)[1]
    running = torch.take_along_dim(top_sequences, best[:, :, None], dim=1)
    running_scores = torch.take_along_dim(continuing_scores, best, dim=1)
    parent_rows = (torch.take_along_dim(top_beams, best, dim=1) + row_offset).view(-1)
    just_finished = ends & is_top_k
    scores = top_scores / (cur_len**length_penalty)
    if early_true:
        scores += torch.all(is_finished, dim=-1, keepdim=True).to(torch.float32) * -1.0e9
    scores += (~can_improve).to(torch.float32) * -1.0e9
    scores += (~just_finished).to(torch.float32) * -1.0e9
    merged_scores = torch.cat((finished_scores, scores), dim=1)
    slots = torch.topk(merged_scores, k=K)[1]
    finished_scores = torch.take_along_dim(merged_scores, slots, dim=1)
    finished_sequences = torch.take_along_dim(torch.cat((finished_sequences, top_sequences), dim=1), slots[:, :, None], dim=1)
    finished_lengths = torch.take_along_dim(torch.cat((finished_lengths, torch.full_like(top_tokens, cur_len)), dim=1), slots, dim=1)
    is_finished = torch.take_along_dim(torch.cat((is_finished, just_finished), dim=1), slots, dim=1)
    next_len = cur_len + 1
    best_length = max_length - 1 if never and length_penalty > 0.0 else next_len - 1
    best_running = running_scores[:, :1] / (best_length**length_penalty)
    worst_finished = torch.where(is_finished, torch.min(finished_scores, dim=1, keepdim=True)[0], torch.full_like(best_running, -1.0e9))
    can_improve = can_improve & torch.any(best_running > worst_finished, dim=-1, keepdim=True)
    stop = not (bool(can_improve.any()) and not (bool(is_finished.all()) and early_true) and not bool(ends.all()))
    done = ~can_improve[:, 0]
    if early_true:
        done = done | is_finished.all(-1)
    return running, running_scores, parent_rows, finished_sequences, finished_scores, finished_lengths, is_finished, can_improve, stop, done

def choose_given(top, running: torch.Tensor, running_scores: torch.Tensor, finished_sequences: torch.Tensor,
           finished_scores: torch.Tensor, finished_lengths: torch.Tensor, is_finished: torch.Tensor, can_improve: torch.Tensor,
           row_offset: torch.Tensor, is_top_k: torch.Tensor, cur_len: int, max_length: int, K: int, eos: int,
           length_penalty: float, early_true: bool, never: bool):
    keep = 2 * K
    top_scores, top_beams, top_tokens = top
    top_sequences = torch.take_along_dim(running, top_beams[:, :, None], dim=1)
    top_sequences[:, :, cur_len] = top_tokens
    if eos >= 0:
        ends = top_tokens == eos
    else:
        ends = torch.zeros_like(top_tokens, dtype=torch.bool)
    if cur_len + 1 >= max_length:
        ends = torch.ones_like(ends)
    continuing_scores = top_scores + ends.to(torch.float32) * -1.0e9
    best = torch.topk(continuing_scores, k=K)[1]
    running = torch.take_along_dim(top_sequences, best[:, :, None], dim=1)
    running_scores = torch.take_along_dim(continuing_scores, best, dim=1)
    parent_rows = (torch.take_along_dim(top_beams, best, dim=1) + row_offset).view(-1)
    just_finished = ends & is_top_k
    scores = top_scores / (cur_len**length_penalty)
    if early_true:
        scores += torch.all(is_finished, dim=-1, keepdim=True).to(torch.float32) * -1.0e9
    scores += (~can_improve).to(torch.float32) * -1.0e9
    scores += (~just_finished).to(torch.float32) * -1.0e9
    merged_scores = torch.cat((finished_scores, scores), dim=1)
    slots = torch.topk(merged_scores, k=K)[1]
    finished_scores = torch.take_along_dim(merged_scores, slots, dim=1)
    finished_sequences = torch.take_along_dim(torch.cat((finished_sequences, top_sequences), dim=1), slots[:, :, None], dim=1)
    finished_lengths = torch.take_along_dim(torch.cat((finished_lengths, torch.full_like(top_tokens, cur_len)), dim=1), slots, dim=1)
    is_finished = torch.take_along_dim(torch.cat((is_finished, just_finished), dim=1), slots, dim=1)
    next_len = cur_len + 1
    best_length = max_length - 1 if never and length_penalty > 0.0 else next_len - 1
    best_running = running_scores[:, :1] / (best_length**length_penalty)
    worst_finished = torch.where(is_finished, torch.min(finished_scores, dim=1, keepdim=True)[0], torch.full_like(best_running, -1.0e9))
    can_improve = can_improve & torch.any(best_running > worst_finished, dim=-1, keepdim=True)
    stop = not (bool(can_improve.any()) and not (bool(is_finished.all()) and early_true) and not bool(ends.all()))
    done = ~can_improve[:, 0]
    if early_true:
        done = done | is_finished.all(-1)
    return running, running_scores, parent_rows, finished_sequences, finished_scores, finished_lengths, is_finished, can_improve, stop, done

import os
SCRIPT = os.environ.get("SCRIPT", "1") == "1"
choose_fn = torch.jit.script(choose) if SCRIPT else choose


CHUNK_ROWS = int(os.environ.get("CHUNK_ROWS", 64))
def choose_top(top, log_probs, *args):
    if top is None:
        return choose(log_probs, *args)
    return choose_given(top, *args)
def beam_search(decoder, batch, num_beams, length_penalty, early_stopping, num_return_sequences, eos, pad, start,
                forced_bos, forced_eos, min_new_tokens, max_length):
    device = decoder.device
    B, K = batch, num_beams
    keep = 2 * K
    is_top_k = (torch.arange(keep, device=device) < K)[None]
    fill = (pad or eos) if eos is not None else -1
    running = torch.full((B, K, max_length), fill, dtype=torch.long, device=device)
    running[:, :, 0] = start
    finished_sequences = running.clone()
    running_scores = torch.zeros((B, K), device=device)
    running_scores[:, 1:] = -1e9
    finished_scores = torch.full((B, K), -1e9, device=device)
    finished_lengths = torch.zeros((B, K), dtype=torch.long, device=device)
    is_finished = torch.zeros((B, K), dtype=torch.bool, device=device)
    can_improve = torch.ones((B, 1), dtype=torch.bool, device=device)
    row_offset = torch.arange(B, device=device)[:, None] * K
    active = torch.arange(B, device=device)
    results, result_lengths = finished_sequences.clone(), finished_lengths.clone()
    first_choice = 2 if _forced_token(1, max_length, forced_bos, forced_eos) is not None else 1
    shared = decoder.shares_first_steps
    if shared:
        decoder.one_row_per_sentence()
    for cur_len in range(1, max_length):
        shared = shared and cur_len <= first_choice
        tokens = running[:, 0, cur_len - 1] if shared else running[:, :, cur_len - 1].reshape(-1)
        hidden_states = decoder.step(tokens, cur_len - 1)
        forced = _forced_token(cur_len, max_length, forced_bos, forced_eos)
        if forced is not None:
            log_probs = torch.full((len(hidden_states), decoder.vocab_size), -math.inf, device=device)
            log_probs[:, forced] = 0
        else:
            logits = decoder.logits(hidden_states)
            log_probs = torch.log_softmax(logits, dim=-1, out=logits)
            if eos is not None and cur_len - 1 < min_new_tokens:
                log_probs[:, eos] = -math.inf
        with torch.jit.optimized_execution(False):
            (running, running_scores, parent_rows, finished_sequences, finished_scores, finished_lengths, is_finished,
             can_improve, stop, done) = choose_fn(log_probs, running, running_scores, finished_sequences, finished_scores,
                finished_lengths, is_finished, can_improve, row_offset, is_top_k, cur_len, max_length, K,
                -1 if eos is None else eos, float(length_penalty), early_stopping is True, early_stopping == "never")
        if stop:
            break
        if not shared:
            decoder.reorder(parent_rows, cur_len)
        elif cur_len == first_choice:
            decoder.expand(parent_rows // K, cur_len)
        if _worth_dropping(int(done.sum()), B):
            results[active[done]], result_lengths[active[done]] = finished_sequences[done], finished_lengths[done]
            kept = (~done).nonzero().view(-1)
            decoder.keep(kept, cur_len)
            active, B = active[kept], len(kept)
            running, running_scores, can_improve = running[kept], running_scores[kept], can_improve[kept]
            finished_sequences, finished_scores = finished_sequences[kept], finished_scores[kept]
            finished_lengths, is_finished = finished_lengths[kept], is_finished[kept]
            row_offset = torch.arange(B, device=device)[:, None] * K
    results[active], result_lengths[active] = finished_sequences, finished_lengths
    sequences = results[:, :num_return_sequences].reshape(batch * num_return_sequences, max_length)
    length = 1 + int(result_lengths[:, :num_return_sequences].max())
    return sequences[:, :length]

def install():
    fg.beam_search = beam_search

def beam_search_chunked(decoder, batch, num_beams, length_penalty, early_stopping, num_return_sequences, eos, pad, start,
                forced_bos, forced_eos, min_new_tokens, max_length):
    device = decoder.device
    B, K = batch, num_beams
    keep = 2 * K
    is_top_k = (torch.arange(keep, device=device) < K)[None]
    fill = (pad or eos) if eos is not None else -1
    running = torch.full((B, K, max_length), fill, dtype=torch.long, device=device)
    running[:, :, 0] = start
    finished_sequences = running.clone()
    running_scores = torch.zeros((B, K), device=device)
    running_scores[:, 1:] = -1e9
    finished_scores = torch.full((B, K), -1e9, device=device)
    finished_lengths = torch.zeros((B, K), dtype=torch.long, device=device)
    is_finished = torch.zeros((B, K), dtype=torch.bool, device=device)
    can_improve = torch.ones((B, 1), dtype=torch.bool, device=device)
    row_offset = torch.arange(B, device=device)[:, None] * K
    active = torch.arange(B, device=device)
    results, result_lengths = finished_sequences.clone(), finished_lengths.clone()
    first_choice = 2 if _forced_token(1, max_length, forced_bos, forced_eos) is not None else 1
    shared = decoder.shares_first_steps
    if shared:
        decoder.one_row_per_sentence()
    for cur_len in range(1, max_length):
        shared = shared and cur_len <= first_choice
        tokens = running[:, 0, cur_len - 1] if shared else running[:, :, cur_len - 1].reshape(-1)
        hidden_states = decoder.step(tokens, cur_len - 1)
        forced = _forced_token(cur_len, max_length, forced_bos, forced_eos)
        if forced is not None:
            log_probs = torch.full((len(hidden_states), decoder.vocab_size), -math.inf, device=device)
            log_probs[:, forced] = 0
            top = None
        else:
            per = len(hidden_states) // B
            group = max(1, CHUNK_ROWS // per)
            parts = []
            for s0 in range(0, B, group):
                logits = decoder.logits(hidden_states[s0 * per:(s0 + group) * per])
                lp = torch.log_softmax(logits, dim=-1, out=logits)
                if eos is not None and cur_len - 1 < min_new_tokens:
                    lp[:, eos] = -math.inf
                parts.append(top_continuations(lp, running_scores[s0:s0 + group], 2 * K, 64))
            top = tuple(torch.cat([p[i] for p in parts]) for i in range(3))
        with torch.jit.optimized_execution(False):
            (running, running_scores, parent_rows, finished_sequences, finished_scores, finished_lengths, is_finished,
             can_improve, stop, done) = choose_top(top, log_probs if top is None else None, running, running_scores, finished_sequences, finished_scores,
                finished_lengths, is_finished, can_improve, row_offset, is_top_k, cur_len, max_length, K,
                -1 if eos is None else eos, float(length_penalty), early_stopping is True, early_stopping == "never")
        if stop:
            break
        if not shared:
            decoder.reorder(parent_rows, cur_len)
        elif cur_len == first_choice:
            decoder.expand(parent_rows // K, cur_len)
        if _worth_dropping(int(done.sum()), B):
            results[active[done]], result_lengths[active[done]] = finished_sequences[done], finished_lengths[done]
            kept = (~done).nonzero().view(-1)
            decoder.keep(kept, cur_len)
            active, B = active[kept], len(kept)
            running, running_scores, can_improve = running[kept], running_scores[kept], can_improve[kept]
            finished_sequences, finished_scores = finished_sequences[kept], finished_scores[kept]
            finished_lengths, is_finished = finished_lengths[kept], is_finished[kept]
            row_offset = torch.arange(B, device=device)[:, None] * K
    results[active], result_lengths[active] = finished_sequences, finished_lengths
    sequences = results[:, :num_return_sequences].reshape(batch * num_return_sequences, max_length)
    length = 1 + int(result_lengths[:, :num_return_sequences].max())
    return sequences[:, :length]

def install():
    fg.beam_search = beam_search
