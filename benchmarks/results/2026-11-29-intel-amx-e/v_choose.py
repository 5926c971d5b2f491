"""Beam search's step: the finished set merged at every step (old) against only where a continuation among the top K
ended (new, the default)."""
from zhen.fast_generation import BeamSearch

new = BeamSearch.choose


def always(self, log_probs, cur_len):
    parent_rows, top_scores, top_sequences, ends = self.continue_best(log_probs, cur_len)
    self.merge_finished(top_scores, top_sequences, ends, ends & self.is_top_k, cur_len)
    return None if self.over(ends, cur_len) else parent_rows


def use_old():
    BeamSearch.choose = always


def use_new():
    BeamSearch.choose = new


VARIANTS = {"old": use_old, "new": use_new}
