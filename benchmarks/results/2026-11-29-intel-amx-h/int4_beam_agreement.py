"""How often an int8 (or, with a third argument int4gGROUP, a fake-quantized int4) draft's beam search step keeps the same running beams as float32's, given the same beams
(the draft stepped in lockstep with the model's beam search, one text a call, beam 4). Usage:
ZHEN_HARDWARE=cpu_bf16=emulated int4_beam_agreement.py CHECKPOINT TEXTS [int8|int4g32|int4g128]"""

import sys

import torch

sys.path.insert(0, "/work/main/benchmarks/results/2026-11-27-intel-session-reuse-mkl-packing")
import zhen  # noqa: E402
from probes import checkpoint_and_pairs  # noqa: E402
from zhen import fast_generation as fg  # noqa: E402

model, tokenizer, rows = checkpoint_and_pairs(sys.argv[1])
sys.path.insert(0, "/work/main/benchmarks/results/2026-11-29-intel-amx-h")
import fakequant; fakequant.install(sys.argv[3] if len(sys.argv) > 3 else "int8")
count = int(sys.argv[2])
K, eos = 4, model.generation_config.eos_token_id


class Lockstep:
    """The model's steps, and the draft's on the same beams."""

    shares_first_steps, passes_several = True, False

    @property
    def rows(self):
        return self.target.rows

    def __init__(self, target, draft):
        self.target, self.draft, self.draft_logits = target, draft, None
        self.device, self.vocab_size = target.device, target.vocab_size

    def step(self, tokens, position):
        self.draft_hidden = self.draft.step(tokens, position)
        return self.target.step(tokens, position)

    def logits(self, hidden):
        self.draft_logits = self.draft.logits(self.draft_hidden).clone()
        return self.target.logits(hidden)

    def __getattr__(self, name):  # reorder, expand, one_row_per_sentence, keep: both
        def both(*args):
            getattr(self.draft, name)(*args)
            return getattr(self.target, name)(*args)

        return both


def running(log_probs, scores):
    values, beams, tokens = original_top(log_probs, scores, 2 * K)
    best = torch.topk(values - (tokens == eos).float() * 1e9, K).indices[0]
    return [(int(beams[0, i]), int(tokens[0, i])) for i in best]


levels = []
original_top, original_search = fg.top_continuations, fg.beam_search


def compared_top(log_probs, scores, k, chunk=64):
    lock = LOCK[0]
    if lock.draft_logits is not None and len(log_probs) == K:
        draft = torch.log_softmax(lock.draft_logits, -1)
        draft[torch.isinf(log_probs)] = -torch.inf  # a banned </s>
        exact, drafted = running(log_probs, scores), running(draft, scores)
        levels.append((exact == drafted, set(exact) == set(drafted)))
    lock.draft_logits = None
    return original_top(log_probs, scores, k, chunk)


def lockstep_search(target, draft, num_beams, *args, draft_length=None, **options):
    """In place of the drafted search: the model's beam search, its draft in lockstep."""
    LOCK[0] = Lockstep(target, draft)
    return original_search(LOCK[0], 1, num_beams, *args, **options)


LOCK = [None]
fg.top_continuations, fg.drafted_beam_search = compared_top, lockstep_search
for source, target in (("en", "zh"), ("zh", "en")):
    levels.clear()
    with torch.inference_mode(), fg.FastDecoder(model, drafts=True):
        for text in [row[source] for row in rows][:count]:
            zhen.translate(text, model=model, tokenizer=tokenizer, src_lang=source, tgt_lang=target, num_beams=K)
    same_order = sum(a for a, _ in levels) / len(levels)
    same_set = sum(b for _, b in levels) / len(levels)
    print(f"{source}->{target}: {len(levels)} beam steps; the draft keeps the same running beams in the same order "
          f"{same_order:.1%}, as a set {same_set:.1%}")
