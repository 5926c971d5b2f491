"""One text a call, greedy, drafted (the model past its `DRAFT_AFTER`-th call): the draft stopping once the sentence
has drafted `</s>` against drafting its full length (the previous code, `draft_next` called without `eos`), taking
turns call by call in one process. Prints each arm's median ms a call, the median paired ratio and whether the
translations are the same.

    python draft_stops_at_eos_ab.py MODEL_DIR TEST_FILE [--calls 48] [--texts-per-call 1]
"""

import argparse
import gzip
import json
import statistics
import time

import torch

from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast, draft_decoding, translate


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("test")
    parser.add_argument("--calls", type=int, default=48)
    parser.add_argument("--texts-per-call", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model = ZhenForConditionalGeneration.from_pretrained(args.model).eval()
    tokenizer = ZhenTokenizerFast.from_pretrained(args.model)
    pairs = [json.loads(line) for line in gzip.open(args.test, "rt")]
    n = args.texts_per_call
    calls = [([p["en" if i % 2 == 0 else "zh"] for p in pairs[i * n : (i + 1) * n]], "zh" if i % 2 == 0 else "en")
             for i in range(args.calls)]  # fmt: skip
    stopping = draft_decoding.draft_next

    def full_length(draft, tokens, drafted, count, eos=None, going=None):
        return stopping(draft, tokens, drafted, count)

    def run(texts, lang, stops):
        draft_decoding.draft_next = stopping if stops else full_length
        start = time.perf_counter()
        out = translate(texts if n > 1 else texts[0], model, tokenizer, tgt_lang=lang, num_beams=1)
        return time.perf_counter() - start, out

    for texts, lang in calls[:40]:  # past DRAFT_AFTER calls: drafted from here on
        run(texts, lang, True)
    times, same = {True: [], False: []}, 0
    for i, (texts, lang) in enumerate(calls):
        outs = {}
        for stops in (True, False) if i % 2 == 0 else (False, True):
            t, outs[stops] = run(texts, lang, stops)
            times[stops].append(t)
        same += outs[True] == outs[False]
    ratios = [b / a for a, b in zip(times[True], times[False])]
    q = statistics.quantiles(ratios, n=4)
    print(f"{args.model} on {args.test}: {len(calls)} calls of {n} text(s), greedy, threads {args.threads}")
    print(f"draft stops at </s>  median {statistics.median(times[True]) * 1e3:.1f} ms")
    print(f"draft full length    median {statistics.median(times[False]) * 1e3:.1f} ms")
    print(f"paired ratio (full / stops) median {statistics.median(ratios):.3f} (quartiles {q[0]:.3f}-{q[2]:.3f}); "
          f"same translations {same}/{len(calls)}")


if __name__ == "__main__":
    main()
