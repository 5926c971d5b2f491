"""Greedy, drafted (the model past its `DRAFT_AFTER`-th call): the draft stopping once every sentence has drafted
`</s>` against drafting its full length (the previous code: `draft_next` called without `eos`), taking turns call by
call in one process ([`paired_calls.take_turns`]).

    python draft_stops_at_eos_ab.py MODEL_DIR TEST_FILE [--calls 48] [--texts-per-call 1]
"""

import paired_calls

from zhen import draft_decoding


def main():
    args, model, tokenizer, calls = paired_calls.setup(__doc__)
    stopping = draft_decoding.draft_next

    def full_length(draft, tokens, drafted, count, eos=None, going=None):
        return stopping(draft, tokens, drafted, count)

    switch = paired_calls.swap(draft_decoding, "draft_next", full_length)
    names = {True: "draft stops at </s>", False: "draft full length"}
    paired_calls.take_turns(args, model, tokenizer, calls, switch, names)


if __name__ == "__main__":
    main()
