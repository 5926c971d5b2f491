# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""`zhen-evaluate`: BLEU and chrF of a zhen checkpoint on a parallel test file, with sacreBLEU signatures.

Example:

```bash
zhen-evaluate --model zhen-small --test ../shared/data/news/test.jsonl.gz --both --beams 4 --hyp-out hyp.txt
```

One bilingual file (JSON Lines, TSV or Parquet, read by `zhen.data.load_parallel`) serves both directions. It prints a
table and, last, one JSON line with every score and signature, and writes the hypotheses one per line: to `--hyp-out`
for one direction, or to `hyp.en-zh.txt` and `hyp.zh-en.txt` for `--both` with `--hyp-out hyp.txt` (default:
`hypotheses.<src>-<tgt>.txt` in the current folder). Each hypotheses file is written under a temporary name and renamed
when complete; one that would be a test file, or a file of the checkpoint, is refused before any work.
"""

import json
from pathlib import Path

from ..data import load_parallel
from ..evaluation import evaluate_model
from ..safe_io import atomic_write, check_output_file
from ..translation import load_model_and_tokenizer
from ._cli import (
    add_int8_argument,
    add_language_check_argument,
    command,
    default_device,
    device_argument,
    language_argument,
    make_parser,
    positive_int,
)


def parse_args(argv=None):
    parser = make_parser(
        "zhen-evaluate",
        "Translate the source side of a parallel test file with a zhen checkpoint and score it against the other "
        "side with sacreBLEU (BLEU with the zh tokenizer for Chinese, 13a for English; chrF).",
    )
    parser.add_argument("--model", required=True, help="Checkpoint folder or Hub id (owner/name).")
    parser.add_argument("--tokenizer", help="Tokenizer folder, if not the model's.")
    parser.add_argument("--test", required=True, nargs="+", help="Parallel test file(s) with en and zh columns.")
    parser.add_argument("--src", type=language_argument, help="Source language, en or zh (default: not --tgt).")
    parser.add_argument("--tgt", type=language_argument, help="Target language, en or zh (required without --both).")
    parser.add_argument("--both", action="store_true", help="Evaluate en→zh and zh→en.")
    parser.add_argument("--hyp-out", help="Where to write the hypotheses (default: hypotheses.<src>-<tgt>.txt).")
    parser.add_argument("--beams", type=positive_int, help="Beam size (default: the checkpoint's generation config).")
    parser.add_argument(
        "--batch-size", type=positive_int,
        help="Sentences per batch (default: 64; greedy search in a float32 or bf16 session on a CPU up to 128).",
    )  # fmt: skip
    parser.add_argument(
        "--max-new-tokens", type=positive_int, help="Most tokens per translation (default: 1.5 × source + 10)."
    )
    parser.add_argument("--limit", type=positive_int, help="Evaluate only the first N pairs (default: all).")
    parser.add_argument("--device", type=device_argument, default=default_device(), help="cpu, cuda, ...")
    add_int8_argument(parser)
    add_language_check_argument(parser)
    parser.add_argument("--no-progress", dest="progress", action="store_false", help="No progress bar.")
    args = parser.parse_args(argv)
    if args.both:
        args.directions = [("en", "zh"), ("zh", "en")]
    elif args.tgt is None:
        parser.error("give the target language with --tgt en|zh, or --both for both directions.")
    else:
        src = args.src or ("zh" if args.tgt == "en" else "en")
        if src == args.tgt:
            parser.error(f"--src and --tgt are both {src!r}; zhen translates between en and zh.")
        args.directions = [(src, args.tgt)]
    return args


def hypothesis_path(hyp_out: str | None, src: str, tgt: str, both: bool) -> Path:
    """`--hyp-out` for one direction; with `--both`, the direction goes before its suffix (`hyp.en-zh.txt`)."""
    if hyp_out is None:
        return Path(f"hypotheses.{src}-{tgt}.txt")
    path = Path(hyp_out)
    return path.with_name(f"{path.stem}.{src}-{tgt}{path.suffix}") if both else path


def check_hypothesis_paths(args) -> None:
    """Refuse, before any work, hypotheses files that are test files or files of the checkpoint."""
    for src, tgt in args.directions:
        path = hypothesis_path(args.hyp_out, src, tgt, args.both)
        check_output_file(path, args.test, [args.model, args.tokenizer], flag="--hyp-out" if args.hyp_out else "")


def format_table(results: dict[str, dict]) -> str:
    """A small text table of BLEU and chrF per direction, then the signatures."""
    lines = [f"{'direction':<10}{'sentences':>10}{'BLEU':>8}{'chrF':>8}"]
    for direction, result in results.items():
        lines.append(f"{direction:<10}{result['sentences']:>10}{result['bleu']:>8.2f}{result['chrf']:>8.2f}")
    for direction, result in results.items():
        lines.append(f"{direction} BLEU signature: {result['bleu_signature']}")
    lines.append(f"chrF signature: {next(iter(results.values()))['chrf_signature']}")
    return "\n".join(lines)


@command("zhen-evaluate")
def main(argv=None) -> None:
    args = parse_args(argv)
    check_hypothesis_paths(args)
    pairs = load_parallel(args.test, check_languages=args.check_languages)
    model, tokenizer = load_model_and_tokenizer(args.model, args.tokenizer, device=args.device, int8=args.int8)
    results = {}
    for src, tgt in args.directions:
        scores, hypotheses = evaluate_model(
            model,
            tokenizer,
            pairs,
            src,
            tgt,
            num_beams=args.beams,
            batch_size=args.batch_size,
            max_new_tokens=args.max_new_tokens,
            limit=args.limit,
            return_hypotheses=True,
            progress=args.progress,
        )
        path = hypothesis_path(args.hyp_out, src, tgt, args.both)
        with atomic_write(path) as file:
            file.write("".join(" ".join(text.splitlines()) + "\n" for text in hypotheses))
        results[f"{src}-{tgt}"] = {**scores, "hypotheses": str(path)}
    print(format_table(results))
    print(json.dumps({"model": args.model, "test": args.test, "results": results}, ensure_ascii=False), flush=True)


if __name__ == "__main__":
    main()
