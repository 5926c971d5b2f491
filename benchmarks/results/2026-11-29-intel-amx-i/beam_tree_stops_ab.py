"""One text a call, beam search, drafted (a float32 session: run with ZHEN_HARDWARE=cpu_bf16=emulated on a CPU with
bf16; the model past its `DRAFT_AFTER`-th call): the draft's tree ending where the draft's own search ends (today's
`draft_beams`, the copy making beam search's full choice) against the previous behaviour (the copy continuing its
running beams only, its tree as deep as the draft length unless every beam ends), taking turns call by call in one
process ([`paired_calls.take_turns`]).

    ZHEN_HARDWARE=cpu_bf16=emulated python beam_tree_stops_ab.py MODEL_DIR TEST_FILE --beams 4 [--calls 48]
"""

import copy

import paired_calls

from zhen import draft_decoding, fast_generation


class PreviousDraftSearch(fast_generation.BeamSearch):
    """The copy's choice before: its running beams only, over when every continuation ends."""

    def choose(self, log_probs, cur_len):
        rows, _, _, ends = self.continue_best(log_probs, cur_len)
        return None if bool(ends.all()) else rows


def main():
    args, model, tokenizer, calls = paired_calls.setup(__doc__)
    with fast_generation.FastDecoder(model) as session:
        assert session.drafts_beams, "beams are drafted in a float32 session only: ZHEN_HARDWARE=cpu_bf16=emulated"
    today = draft_decoding.draft_beams

    def previous(draft, search, *args):
        search = copy.copy(search)
        search.__class__ = PreviousDraftSearch
        return today(draft, search, *args)

    switch = paired_calls.swap(draft_decoding, "draft_beams", previous)
    names = {True: "tree ends with the draft's search", False: "tree as deep as the draft length"}
    paired_calls.take_turns(args, model, tokenizer, calls, switch, names)


if __name__ == "__main__":
    main()
