"""`zhen-train-tokenizer`: train the shared English–Chinese tokenizer of zhen and save it to a folder.

Example:

```bash
zhen-train-tokenizer data/tatoeba/train.jsonl.gz data/news/train.jsonl.gz --output-dir tokenizer \\
    --eval-files data/tatoeba/valid.jsonl.gz data/news/valid.jsonl.gz
```

The folder loads with `AutoTokenizer.from_pretrained("tokenizer")` (after `import zhen`, or with
`trust_remote_code=True` where zhen is not installed).
"""

import argparse
import time

from ..data import load_parallel
from ..tokenizer_training import DEFAULT_CHARACTER_COVERAGE, DEFAULT_VOCAB_SIZE, format_report, train_tokenizer


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="zhen-train-tokenizer",
        description="Train the byte-fallback BPE vocabulary shared by English and Chinese on both sides of a "
        "parallel corpus, print its share per script and its compactness, and save it with save_pretrained.",
    )
    data = parser.add_argument_group("training data (local files or a Hub dataset)")
    data.add_argument(
        "files",
        nargs="*",
        help="JSON Lines, TSV or Parquet files with English and Chinese columns (.gz read transparently).",
    )
    data.add_argument("--files", dest="more_files", nargs="+", default=[], metavar="FILE", help="More such files.")
    data.add_argument("--dataset", help="A Hub dataset name (or local dataset folder), e.g. wmt/wmt19.")
    data.add_argument("--dataset-config", help="Its configuration, e.g. zh-en.")
    data.add_argument("--split", default="train", help="Its split; slices such as train[:100000] work.")
    data.add_argument("--en-column", default="en", help="Name of the English column.")
    data.add_argument("--zh-column", default="zh", help="Name of the Chinese column.")
    data.add_argument("--skip-malformed", action="store_true", help="Skip malformed lines instead of failing.")
    data.add_argument(
        "--eval-files",
        nargs="+",
        default=[],
        metavar="FILE",
        help="Held-out files to measure compactness on (default: the training data).",
    )
    training = parser.add_argument_group("training")
    training.add_argument(
        "--vocab-size",
        type=int,
        default=DEFAULT_VOCAB_SIZE,
        help="Vocabulary size, special and byte tokens included (default: %(default)s).",
    )
    training.add_argument(
        "--min-frequency", type=int, default=2, help="How often a pair must occur to be merged (default: %(default)s)."
    )
    training.add_argument(
        "--character-coverage",
        type=float,
        default=DEFAULT_CHARACTER_COVERAGE,
        help="Share of characters the alphabet covers; rarer ones use byte tokens (default: %(default)s).",
    )
    training.add_argument(
        "--balance",
        choices=["bytes", "chars", "none"],
        default="bytes",
        help="Repeat the smaller language side to equal UTF-8 bytes or characters (default: %(default)s).",
    )
    training.add_argument("--no-progress", dest="show_progress", action="store_false", help="Hide progress bars.")
    parser.add_argument("--output-dir", required=True, help="Folder to save the tokenizer to.")
    args = parser.parse_args(argv)
    args.files = args.files + args.more_files
    if not args.files and args.dataset is None:
        parser.error("give training files (positional or --files) or a --dataset.")
    if args.files and args.dataset is not None:
        parser.error("give either training files or a --dataset, not both.")
    return args


def main(argv=None) -> None:
    args = parse_args(argv)
    columns = {"en_column": args.en_column, "zh_column": args.zh_column, "skip_malformed": args.skip_malformed}
    if args.files:
        pairs, report = load_parallel(args.files, return_report=True, **columns)
    else:
        pairs, report = load_parallel(
            dataset=args.dataset, dataset_config=args.dataset_config, split=args.split, return_report=True, **columns
        )
    print(report, flush=True)

    start = time.perf_counter()
    tokenizer = train_tokenizer(
        pairs,
        vocab_size=args.vocab_size,
        min_frequency=args.min_frequency,
        character_coverage=args.character_coverage,
        balance=None if args.balance == "none" else args.balance,
        show_progress=args.show_progress,
    )
    seconds = time.perf_counter() - start
    tokenizer.save_pretrained(args.output_dir)

    eval_pairs = load_parallel(args.eval_files, **columns) if args.eval_files else pairs
    print(format_report(tokenizer, eval_pairs, seconds))
    print(f"Compactness measured on {'--eval-files' if args.eval_files else 'the training data'}.")
    print(f"Saved to {args.output_dir}")


if __name__ == "__main__":
    main()
