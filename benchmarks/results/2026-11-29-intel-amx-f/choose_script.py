import sys, time, warnings, statistics, copy, math
from typing import Optional, Tuple
import torch
warnings.simplefilter("ignore")
from transformers.utils import logging; logging.set_verbosity_error()
import zhen, zhen.fast_generation as fg
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast
torch.set_num_threads(2)

def top_continuations(log_probs: torch.Tensor, running_scores: torch.Tensor, k: int, chunk: int = 64):
    batch, beams = running_scores.shape[0], running_scores.shape[1]
    rows, vocab = log_probs.shape[0], log_probs.shape[1]
    missing = -vocab % chunk
    if missing:
        log_probs = torch.nn.functional.pad(log_probs, (0, missing), value=-math.inf)
    maxima = log_probs.view(batch, rows // batch, -1, chunk).amax(-1) + running_scores[:, :, None]
    chunks = maxima.shape[-1]
    best = torch.topk(maxima.view(batch, -1), k).indices.sort(-1).values
    beam, columns = best // chunks, (best % chunks)[:, :, None] * chunk + torch.arange(chunk, device=best.device)
    row = torch.arange(batch, device=best.device)[:, None] * (rows // batch)
    if rows > batch:
        row = row + beam
    sums = log_probs.take(row[:, :, None] * log_probs.shape[1] + columns) + running_scores.gather(1, beam)[:, :, None]
    values, positions = torch.topk(sums.view(batch, -1), k)
    return values, beam.gather(1, positions // chunk), columns.view(batch, -1).gather(1, positions)

def continue_best(log_probs: torch.Tensor, running: torch.Tensor, running_scores: torch.Tensor, row_offset: torch.Tensor,
                  is_top_k: torch.Tensor, num_beams: int, cur_len: int, eos: Optional[int], max_length: int):
    top_scores, top_beams, top_tokens = top_continuations(log_probs, running_scores, 2 * num_beams)
    top_sequences = torch.take_along_dim(running, top_beams[:, :, None], dim=1)
    top_sequences[:, :, cur_len] = top_tokens
    ends = top_tokens == eos if eos is not None else torch.zeros_like(top_tokens, dtype=torch.bool)
    if cur_len + 1 >= max_length:
        ends = torch.ones_like(ends)
    continuing_scores = top_scores + ends.to(torch.float32) * -1.0e9
    best = torch.topk(continuing_scores, k=num_beams)[1]
    running = torch.take_along_dim(top_sequences, best[:, :, None], dim=1)
    running_scores = torch.take_along_dim(continuing_scores, best, dim=1)
    parent_rows = (torch.take_along_dim(top_beams, best, dim=1) + row_offset).view(-1)
    just_finished = ends & is_top_k
    return parent_rows, top_scores, top_sequences, ends, running, running_scores, just_finished, bool(just_finished.any())

def over(running_scores: torch.Tensor, finished_scores: torch.Tensor, is_finished: torch.Tensor, can_improve: torch.Tensor,
         ends: torch.Tensor, cur_len: int, max_length: int, length_penalty: float, early_true: bool, never: bool):
    best_length = max_length - 1 if never and length_penalty > 0.0 else cur_len
    best_running = running_scores[:, :1] / (best_length**length_penalty)
    worst_finished = torch.where(is_finished, torch.min(finished_scores, dim=1, keepdim=True)[0], -1e9)
    can_improve = can_improve & torch.any(best_running > worst_finished, dim=-1, keepdim=True)
    full = early_true and bool(is_finished.all())
    return not (bool(can_improve.any()) and not full and not bool(ends.all())), can_improve

S_CB, S_OV = torch.jit.script(continue_best), torch.jit.script(over)

def choose_new(self, log_probs, cur_len):
    parent_rows, top_scores, top_sequences, ends, self.running, self.running_scores, just_finished, merge = S_CB(
        log_probs, self.running, self.running_scores, self.row_offset, self.is_top_k, self.num_beams, cur_len, self.eos, self.max_length)
    if merge:
        self.merge_finished(top_scores, top_sequences, ends, just_finished, cur_len)
    done, self.can_improve = S_OV(self.running_scores, self.finished_scores, self.is_finished, self.can_improve, ends, cur_len,
                                  self.max_length, self.length_penalty, self.early_stopping is True, self.early_stopping == "never")
    return None if done else parent_rows

path = sys.argv[1]
tok = ZhenTokenizerFast.from_pretrained(path)
m = ZhenForConditionalGeneration.from_pretrained(path).eval()
cap = []
orig = fg.BeamSearch.choose
def spy(self, lp, cur_len):
    cap.append((copy.copy(self), lp.clone(), cur_len))
    return orig(self, lp, cur_len)
fg.BeamSearch.choose = spy
for t in ["The quick brown fox jumps over the lazy dog near the river bank.", "I love nature.", "Where is the station?"]:
    zhen.translate(t, m, tok, src_lang="en", tgt_lang="zh", num_beams=4)
fg.BeamSearch.choose = orig
print(len(cap), "steps")
# equality
for st, lp, c in cap:
    a, b = copy.copy(st), copy.copy(st)
    ra, rb = orig(a, lp, c), choose_new(b, lp, c)
    assert (ra is None) == (rb is None) and (ra is None or torch.equal(ra, rb))
    for name in ("running", "running_scores", "finished_scores", "finished_sequences", "is_finished", "can_improve"):
        assert torch.equal(getattr(a, name), getattr(b, name)), name
print("equal")
with torch.jit.optimized_execution(False):
    t = {"old": [], "new": []}
    for r in range(100):
        for name, f in (("old", orig), ("new", choose_new)) if r % 2 else (("new", choose_new), ("old", orig)):
            s0 = time.perf_counter()
            for st, lp, c in cap: f(copy.copy(st), lp, c)
            t[name].append((time.perf_counter() - s0) / len(cap))
print({k: f"{statistics.median(v)*1e6:.0f}us/step" for k, v in t.items()})
