# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""How many CUDA graphs GPU training captures: the batch shapes of one epoch of zhen-train's token-budget batches,
as batched (what an eager step sees: each new one may cost a library's per-shape setup) and rounded up as
`zhen.fast_training.TrainingGraphs` rounds them, how many batches have a shape seen at least four times in the epoch
(the batches a measured shape decides by), and the tokens the rounding adds. Both directions of
every pair, as `zhen-train --directions both` trains; lengths include the language code and end token.

    python benchmarks/graph_shapes.py --train-files ../shared/data/tatoeba/train.jsonl.gz \\
        ../shared/data/news/train.jsonl.gz --tokenizer runs/c1/model --max-tokens 4096,8192,16384
"""

import argparse
from collections import Counter

import numpy as np
from transformers import AutoTokenizer

from zhen.batching import token_budget_batches
from zhen.data import load_parallel
from zhen.fast_training import GRAPH_MULTIPLE, round_up


def lengths(tokenizer, texts: list[str], longest: int) -> np.ndarray:
    ids = tokenizer(list(texts), add_special_tokens=False)["input_ids"]
    return np.minimum([len(x) + 2 for x in ids], longest)


def epoch_shapes(source: np.ndarray, target: np.ndarray, max_tokens: int, multiple: int) -> dict:
    batches = token_budget_batches(source, target, max_tokens, seed=0, epoch=0)
    shapes, raw, real, rounded = Counter(), set(), 0, 0
    for batch in batches:
        rows, s, t = len(batch), int(source[batch].max()), int(target[batch].max())
        raw.add((rows, s, t))
        shape = (round_up(rows, multiple), round_up(s, multiple), round_up(t, multiple))
        shapes[shape] += 1
        real += rows * (s + t)
        rounded += shape[0] * (shape[1] + shape[2])
    recurring = sum(count for count in shapes.values() if count >= 4)
    return dict(batches=len(batches), raw=len(raw), shapes=len(shapes), recurring=recurring / len(batches),
                added=rounded / real - 1)  # fmt: skip


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--train-files", nargs="+", required=True)
    parser.add_argument("--tokenizer", required=True, help="a zhen tokenizer (a model or tokenizer folder)")
    parser.add_argument("--max-tokens", default="4096", help="comma-separated token budgets")
    parser.add_argument("--max-length", type=int, default=256, help="zhen-train's max source/target length")
    parser.add_argument("--multiple", type=int, default=GRAPH_MULTIPLE)
    args = parser.parse_args(argv)
    pairs = load_parallel(args.train_files)
    tokenizer = AutoTokenizer.from_pretrained(args.tokenizer)
    en, zh = (lengths(tokenizer, pairs[column], args.max_length) for column in ("en", "zh"))
    source, target = np.concatenate([en, zh]), np.concatenate([zh, en])
    print(f"{len(source):,} examples (both directions), shapes rounded up to multiples of {args.multiple}\n")
    print(
        "| --max-tokens | batches per epoch | shapes as batched | shapes rounded | batches of a shape seen >= 4 times "
        "| tokens added by rounding |"
    )
    print("| --- | --- | --- | --- | --- | --- |")
    for max_tokens in map(int, args.max_tokens.split(",")):
        r = epoch_shapes(source, target, max_tokens, args.multiple)
        cells = [r["batches"], r["raw"], r["shapes"], f"{r['recurring']:.1%}", f"+{r['added']:.1%}"]
        print(f"| {max_tokens} | " + " | ".join(map(str, cells)) + " |")


if __name__ == "__main__":
    main()
