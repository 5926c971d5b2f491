"""A bf16 session's beam search with the LM head's screen (`ScreenedBf16Head`, from `beam_screen.patch`: `git apply`
it first) against the bf16 head product, taking turns call by call in one process, the same session copies: the
screen switched off by `SCREEN_PATIENCE = 0` (the full bf16 product, what a session without the screen does)
([`paired_calls.take_turns`]); then the screen's answered and declined steps.

    python beam_screen_ab.py MODEL_DIR TEST_FILE --beams 4 [--texts-per-call 1] [--calls 48]
"""

import paired_calls

from zhen import fast_generation, screened_argmax


def main():
    args, model, tokenizer, calls = paired_calls.setup(__doc__)
    counts = {"answered": 0, "declined": 0}
    screen = screened_argmax.ScreenedArgmax.top_log_probs

    def counted(self, *args, **kwargs):
        log_probs = screen(self, *args, **kwargs)
        counts["declined" if log_probs is None else "answered"] += 1
        return log_probs

    screened_argmax.ScreenedArgmax.top_log_probs = counted
    switch = paired_calls.swap(fast_generation, "SCREEN_PATIENCE", 0)
    names = {True: "screened", False: "bf16 head"}
    paired_calls.take_turns(args, model, tokenizer, calls, switch, names)
    print(f"screen steps answered {counts['answered']}, declined {counts['declined']} (warm calls included)")


if __name__ == "__main__":
    main()
