import torch
from zhen.fast_generation import BeamSearch, _worth_dropping
new = BeamSearch.drop_done
def old_drop_done(self, decoder, cur_len):
    done = ~self.can_improve[:, 0] | (self.is_finished.all(-1) & (self.early_stopping is True))
    if not _worth_dropping(int(done.sum()), self.batch):
        return
    self.results[self.active[done]] = self.finished_sequences[done]
    self.result_lengths[self.active[done]] = self.finished_lengths[done]
    kept = (~done).nonzero().view(-1)
    decoder.keep(kept, cur_len)
    self.active, self.batch = self.active[kept], len(kept)
    for name in ("running", "running_scores", "can_improve", "finished_sequences", "finished_scores",
                 "finished_lengths", "is_finished"):
        setattr(self, name, getattr(self, name)[kept])
    self.row_offset = torch.arange(self.batch, device=self.device)[:, None] * self.num_beams
def use_old(): BeamSearch.drop_done = old_drop_done
def use_new(): BeamSearch.drop_done = new
VARIANTS = {"old": use_old, "new": use_new}
