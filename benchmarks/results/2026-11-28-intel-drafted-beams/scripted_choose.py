"""A beam step's bookkeeping (`BeamSearch.choose`) for one sentence, beam 4, hot: as it is, as one Python function, and
that function compiled by TorchScript (same results, asserted). Not kept: 70-80 us a step."""
import sys, math, torch
from typing import Tuple
sys.path.insert(0, "/work/main/benchmarks/results/2026-11-27-intel-session-reuse-mkl-packing")
from probes import best_us
from zhen.fast_generation import BeamSearch
torch.set_num_threads(2)

def top_cont(log_probs: torch.Tensor, running_scores: torch.Tensor, k: int, chunk: int = 64) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    batch, beams = running_scores.shape[0], running_scores.shape[1]
    rows, vocab = log_probs.shape[0], log_probs.shape[1]
    missing = (chunk - vocab % chunk) % chunk
    if missing:
        log_probs = torch.nn.functional.pad(log_probs, [0, missing], value=-math.inf)
    maxima = log_probs.view(batch, rows // batch, -1, chunk).amax(-1) + running_scores[:, :, None]
    chunks = maxima.shape[-1]
    best = torch.topk(maxima.view(batch, -1), k).indices.sort(-1).values
    beam = torch.div(best, chunks, rounding_mode="floor")
    columns = (best % chunks)[:, :, None] * chunk + torch.arange(chunk, device=best.device)
    row = torch.arange(batch, device=best.device)[:, None] * (rows // batch) + beam
    sums = log_probs.take(row[:, :, None] * log_probs.shape[1] + columns) + running_scores.gather(1, beam)[:, :, None]
    values, positions = torch.topk(sums.view(batch, -1), k)
    return values, beam.gather(1, torch.div(positions, chunk, rounding_mode="floor")), columns.view(batch, -1).gather(1, positions)

def step(log_probs: torch.Tensor, running: torch.Tensor, running_scores: torch.Tensor, finished_sequences: torch.Tensor,
         finished_scores: torch.Tensor, finished_lengths: torch.Tensor, is_finished: torch.Tensor, can_improve: torch.Tensor,
         row_offset: torch.Tensor, is_top_k: torch.Tensor, cur_len: int, max_length: int, eos: int, length_penalty: float,
         early_true: bool, never: bool):
    K = running.shape[1]
    top_scores, top_beams, top_tokens = top_cont(log_probs, running_scores, 2 * K)
    top_sequences = torch.take_along_dim(running, top_beams[:, :, None], dim=1)
    top_sequences[:, :, cur_len] = top_tokens
    ends = top_tokens == eos
    if cur_len + 1 >= max_length:
        ends = torch.ones_like(ends)
    continuing_scores = top_scores + ends.to(torch.float32) * -1.0e9
    best = torch.topk(continuing_scores, k=K)[1]
    running = torch.take_along_dim(top_sequences, best[:, :, None], dim=1)
    running_scores = torch.take_along_dim(continuing_scores, best, dim=1)
    parent_rows = (torch.take_along_dim(top_beams, best, dim=1) + row_offset).view(-1)
    just_finished = ends & is_top_k
    scores = top_scores / (cur_len ** length_penalty)
    all_finished = torch.all(is_finished, dim=-1, keepdim=True)
    scores += (all_finished & early_true).to(torch.float32) * -1.0e9
    scores += (~can_improve).to(torch.float32) * -1.0e9
    scores += (~just_finished).to(torch.float32) * -1.0e9
    merged_scores = torch.cat((finished_scores, scores), dim=1)
    slots = torch.topk(merged_scores, k=K)[1]
    finished_scores = torch.take_along_dim(merged_scores, slots, dim=1)
    finished_sequences = torch.take_along_dim(torch.cat((finished_sequences, top_sequences), dim=1), slots[:, :, None], dim=1)
    finished_lengths = torch.take_along_dim(torch.cat((finished_lengths, torch.full_like(top_tokens, cur_len)), dim=1), slots, dim=1)
    is_finished = torch.take_along_dim(torch.cat((is_finished, just_finished), dim=1), slots, dim=1)
    best_length = max_length - 1 if never and length_penalty > 0.0 else cur_len
    best_running = running_scores[:, :1] / (best_length ** length_penalty)
    worst_finished = torch.where(is_finished, torch.min(finished_scores, dim=1, keepdim=True)[0], torch.full_like(finished_scores, -1.0e9))
    can_improve = can_improve & torch.any(best_running > worst_finished, dim=-1, keepdim=True)
    return parent_rows, running, running_scores, finished_sequences, finished_scores, finished_lengths, is_finished, can_improve, ends

scripted = torch.jit.script(step)
for vocab in (16384, 32768):
    lp = torch.log_softmax(torch.randn(4, vocab), -1)
    s = BeamSearch("cpu", 1, 4, 1.0, False, 2, 0, 2, 64); s.choose(lp, 5)
    st = dict(s.__dict__)
    def eager():
        s.__dict__.update(st); s.choose(lp, 5)
    args = lambda: (lp, st["running"], st["running_scores"], st["finished_sequences"], st["finished_scores"], st["finished_lengths"], st["is_finished"], st["can_improve"], st["row_offset"], st["is_top_k"], 5, 64, 2, 1.0, False, False)
    a = args()
    r1 = step(*a); r2 = scripted(*a)
    s.__dict__.update(st); pr = s.choose(lp, 5)
    assert torch.equal(pr, r2[0]) and torch.equal(s.finished_scores, r2[4]) and torch.equal(s.running, r2[1])
    print(vocab, "eager choose", round(best_us(eager, 300)), "python fn", round(best_us(lambda: step(*a), 300)), "scripted", round(best_us(lambda: scripted(*a), 300)))
