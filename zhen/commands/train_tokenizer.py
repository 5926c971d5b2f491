# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""`zhen-train-tokenizer`: train the shared English–Chinese tokenizer of zhen and save it to a folder.

Example:

```bash
zhen-train-tokenizer data/tatoeba/train.jsonl.gz data/news/train.jsonl.gz --output-dir tokenizer \\
    --eval-files data/tatoeba/valid.jsonl.gz data/news/valid.jsonl.gz
```

The folder loads with `AutoTokenizer.from_pretrained("tokenizer")` (after `import zhen`, or with
`trust_remote_code=True` where zhen is not installed). It is written to a temporary folder and renamed into place when
complete; an existing tokenizer folder is replaced only with `--overwrite`, and a folder that holds anything else (a
model checkpoint, data) never.
"""

import time

from ..data import load_parallel
from ..safe_io import TOKENIZER_FILES, atomic_directory, check_output_folder, check_replaceable_folder
from ..tokenizer_training import DEFAULT_CHARACTER_COVERAGE, DEFAULT_VOCAB_SIZE, format_report, train_tokenizer
from ._cli import add_language_check_argument, command, make_parser, positive_float, positive_int


def parse_args(argv=None):
    parser = make_parser(
        "zhen-train-tokenizer",
        "Train the byte-fallback BPE vocabulary shared by English and Chinese on both sides of a parallel corpus, "
        "print its share per script and its compactness, and save it with save_pretrained.",
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
    add_language_check_argument(data)
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
        type=positive_int,
        default=DEFAULT_VOCAB_SIZE,
        help="Vocabulary size, special and byte tokens included.",
    )
    training.add_argument(
        "--min-frequency", type=positive_int, default=2, help="How often a pair must occur to be merged."
    )
    training.add_argument(
        "--character-coverage",
        type=positive_float,
        default=DEFAULT_CHARACTER_COVERAGE,
        help="Share of characters the alphabet covers, in (0, 1]; rarer ones use byte tokens.",
    )
    training.add_argument(
        "--balance",
        choices=["bytes", "chars", "none"],
        default="bytes",
        help="Repeat the smaller language side to equal UTF-8 bytes or characters.",
    )
    training.add_argument("--no-progress", dest="show_progress", action="store_false", help="Hide progress bars.")
    parser.add_argument("--output-dir", required=True, help="Folder to save the tokenizer to (a new folder).")
    parser.add_argument(
        "--overwrite", action="store_true", help="Replace --output-dir if it holds a tokenizer and nothing else."
    )
    args = parser.parse_args(argv)
    args.files = args.files + args.more_files
    if not args.files and args.dataset is None:
        parser.error("give training files (positional or --files) or a --dataset.")
    if args.files and args.dataset is not None:
        parser.error("give either training files or a --dataset, not both.")
    return args


def check_output_dir(args) -> None:
    """Refuse, before any work, an output folder that overlaps the data or holds what --overwrite may not replace."""
    check_output_folder(args.output_dir, [*args.files, *args.eval_files], flag="--output-dir")
    check_replaceable_folder(
        args.output_dir,
        args.overwrite,
        allowed=TOKENIZER_FILES,
        required="tokenizer.json",
        what="a tokenizer",
        flag="--overwrite",
    )


@command("zhen-train-tokenizer")
def main(argv=None) -> None:
    args = parse_args(argv)
    check_output_dir(args)
    columns = {
        "en_column": args.en_column,
        "zh_column": args.zh_column,
        "skip_malformed": args.skip_malformed,
        "check_languages": args.check_languages,
    }
    if args.files:
        pairs, report = load_parallel(args.files, return_report=True, **columns)
    else:
        pairs, report = load_parallel(
            dataset=args.dataset, dataset_config=args.dataset_config, split=args.split, return_report=True, **columns
        )
    eval_pairs = load_parallel(args.eval_files, **columns) if args.eval_files else pairs
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
    with atomic_directory(args.output_dir) as staging:
        tokenizer.save_pretrained(staging)

    print(format_report(tokenizer, eval_pairs, seconds))
    print(f"Compactness measured on {'--eval-files' if args.eval_files else 'the training data'}.")
    print(f"Saved to {args.output_dir}")


if __name__ == "__main__":
    main()
