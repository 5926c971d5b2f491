"""What this session's in-process A/B scripts share: the options, the model and its test calls, and two arms
(`True`: today's code, `False`: the other) taking turns call by call, the order alternating, after warm calls."""

import argparse
import gzip
import json
import statistics
import time

import torch

from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast, translate


def setup(doc: str, calls: int = 48):
    """Parsed options (`model`, `test`, `--calls`, `--texts-per-call`, `--beams`, `--threads`), the model, its
    tokenizer and the calls: `(texts, target language)`, en->zh and zh->en in turn."""
    parser = argparse.ArgumentParser(description=doc)
    parser.add_argument("model")
    parser.add_argument("test")
    parser.add_argument("--calls", type=int, default=calls)
    parser.add_argument("--texts-per-call", type=int, default=1)
    parser.add_argument("--beams", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model = ZhenForConditionalGeneration.from_pretrained(args.model).eval()
    tokenizer = ZhenTokenizerFast.from_pretrained(args.model)
    pairs = [json.loads(line) for line in gzip.open(args.test, "rt")]
    n = args.texts_per_call
    texts = [([p["en" if i % 2 == 0 else "zh"] for p in pairs[i * n : (i + 1) * n]], "zh" if i % 2 == 0 else "en")
             for i in range(args.calls)]  # fmt: skip
    return args, model, tokenizer, texts


def swap(module, name: str, other):
    """The arms' switch for a module attribute: today's value (as found) or `other`."""
    today = getattr(module, name)
    return lambda arm: setattr(module, name, today if arm else other)


def take_turns(args, model, tokenizer, calls, switch, names: dict, warm: int = 40):
    """Each call translated by both arms (`switch(arm)` sets one up), `warm` calls of today's arm first (past
    `DRAFT_AFTER`, and the screen's packing); prints each arm's median ms, the median paired ratio (other / today)
    with its quartiles and how many translations the arms share."""

    def run(texts, lang, arm):
        switch(arm)
        start = time.perf_counter()
        one = texts[0] if len(texts) == 1 else texts
        out = translate(one, model, tokenizer, tgt_lang=lang, num_beams=args.beams)
        return time.perf_counter() - start, out

    for texts, lang in (calls * (1 + warm // len(calls)))[:warm]:
        run(texts, lang, True)
    times, same = {True: [], False: []}, 0
    for i, (texts, lang) in enumerate(calls):
        outs = {}
        for arm in (True, False) if i % 2 == 0 else (False, True):
            seconds, outs[arm] = run(texts, lang, arm)
            times[arm].append(seconds)
        same += outs[True] == outs[False]
    ratios = [other / today for today, other in zip(times[True], times[False])]
    q = statistics.quantiles(ratios, n=4)
    print(f"{args.model} on {args.test}: {len(calls)} calls of {args.texts_per_call} text(s), beam {args.beams}, "
          f"threads {args.threads}")
    for arm in (True, False):
        print(f"{names[arm]:36s} median {statistics.median(times[arm]) * 1e3:.1f} ms")
    print(f"paired ratio ({names[False]} / {names[True]}) median {statistics.median(ratios):.3f} "
          f"(quartiles {q[0]:.3f}-{q[2]:.3f}); same translations {same}/{len(calls)}")
