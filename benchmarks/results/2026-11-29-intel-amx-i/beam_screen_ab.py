"""A bf16 session's beam search with the LM head's screen (ScreenedBf16Head) against the bf16 head product, taking
turns call by call in one process, the same session copies: the screen switched off by `SCREEN_PATIENCE = 0` (the
full bf16 product, what a session without the screen does). Prints each arm's median milliseconds a call, the median
of the paired ratios, how often the two translations are the same, and the screen's answered/declined steps.

    python beam_screen_ab.py MODEL_DIR TEST_FILE --texts-per-call 1 --calls 48 --beams 4
"""

import argparse
import gzip
import json
import statistics
import time

import torch

from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast, fast_generation, screened_argmax, translate


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("test")
    parser.add_argument("--texts-per-call", type=int, default=1)
    parser.add_argument("--calls", type=int, default=48)
    parser.add_argument("--beams", type=int, default=4)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model = ZhenForConditionalGeneration.from_pretrained(args.model).eval()
    tokenizer = ZhenTokenizerFast.from_pretrained(args.model)
    pairs = [json.loads(line) for line in gzip.open(args.test, "rt")]
    calls = []
    for i in range(args.calls):
        chunk = pairs[i * args.texts_per_call : (i + 1) * args.texts_per_call]
        en_to_zh = i % 2 == 0
        calls.append(([p["en" if en_to_zh else "zh"] for p in chunk], "zh" if en_to_zh else "en"))
    counts = {"answered": 0, "declined": 0}
    original = screened_argmax.ScreenedArgmax.top_log_probs

    def counted(self, *a, **k):
        out = original(self, *a, **k)
        counts["declined" if out is None else "answered"] += 1
        return out

    screened_argmax.ScreenedArgmax.top_log_probs = counted
    patience = fast_generation.SCREEN_PATIENCE

    def run(texts, lang, screen):
        fast_generation.SCREEN_PATIENCE = patience if screen else 0
        start = time.perf_counter()
        out = translate(texts, model, tokenizer, tgt_lang=lang, num_beams=args.beams)
        return time.perf_counter() - start, out

    for texts, lang in calls[:20]:  # warm: sessions, programs, the screen's FBGEMM packing (PACK_AFTER steps)
        run(texts, lang, True)
        run(texts, lang, False)
    counts.update(answered=0, declined=0)
    times = {True: [], False: []}
    same = 0
    for i, (texts, lang) in enumerate(calls):
        order = (True, False) if i % 2 == 0 else (False, True)
        outs = {}
        for screen in order:
            t, outs[screen] = run(texts, lang, screen)
            times[screen].append(t)
        same += outs[True] == outs[False]
    ratios = [b / a for a, b in zip(times[True], times[False])]
    print(f"head {tuple(model.lm_head.weight.shape)}, session head {type(model.lm_head).__name__} (outside a session)")
    print(f"calls {len(calls)}, {args.texts_per_call} text(s) a call, beam {args.beams}, threads {args.threads}")
    print(f"screened   median {statistics.median(times[True]) * 1e3:.1f} ms")
    print(f"bf16 head  median {statistics.median(times[False]) * 1e3:.1f} ms")
    print(f"paired ratio (bf16 head / screened) median {statistics.median(ratios):.3f}, "
          f"quartiles {statistics.quantiles(ratios, n=4)[0]:.3f}-{statistics.quantiles(ratios, n=4)[2]:.3f}")
    print(f"same translations {same}/{len(calls)}; screen steps answered {counts['answered']}, declined "
          f"{counts['declined']}")


if __name__ == "__main__":
    main()
