"""`zhen-translate`: translate text line by line with a zhen checkpoint.

Example:

```bash
echo "I love nature." | zhen-translate --model zhen-small --tgt zh
zhen-translate --model zhen-small --src zh --tgt en -i news.zh.txt -o news.en.txt --beams 4
```

One line in gives one line out, in order; an empty line gives an empty line. Without `-i` it reads standard input in
chunks and writes each chunk's translations as soon as they are done (line by line from a terminal), so it can sit in
a pipe. A line longer than the model reads (its position table, or `--max-source-tokens`) is truncated to its start,
with a warning naming the line number; the run goes on. Newlines the model generates become spaces, so the output stays
aligned with the input.
"""

import argparse
import sys
from contextlib import ExitStack
from itertools import islice
from pathlib import Path

from transformers.utils import logging

from ..translation import (
    DEFAULT_BATCH_SIZE,
    add_int8_argument,
    default_device,
    language_argument,
    load_model_and_tokenizer,
    translate,
)


logger = logging.get_logger("zhen.translate")

LINES_PER_CHUNK = 8  # batches per chunk read from a file or pipe: enough for length-sorting to pay off


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="zhen-translate",
        description="Translate lines of text between English and Chinese with a zhen checkpoint: one line in, one "
        "line out, streaming from standard input when no input file is given.",
    )
    parser.add_argument("--model", required=True, help="Checkpoint folder (or Hub id).")
    parser.add_argument("--tokenizer", help="Tokenizer folder, if not the model's.")
    parser.add_argument("--src", type=language_argument, help="Source language, en or zh (default: not --tgt).")
    parser.add_argument("--tgt", type=language_argument, required=True, help="Target language, en or zh.")
    parser.add_argument("-i", "--input", help="Input file, one text per line (default: standard input).")
    parser.add_argument("-o", "--output", help="Output file (default: standard output).")
    parser.add_argument("--beams", type=int, help="Beam size (default: the checkpoint's generation config).")
    parser.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE, help="Lines per batch (%(default)s).")
    parser.add_argument("--max-new-tokens", type=int, help="Most tokens per translation (default: 1.5 × source + 10).")
    parser.add_argument(
        "--max-source-tokens", type=int, help="Truncate longer lines (default: the model's position table)."
    )
    parser.add_argument("--device", default=default_device(), help="cpu, cuda, cuda:1, mps... (default: %(default)s)")
    add_int8_argument(parser)
    parser.add_argument("--no-progress", dest="progress", action="store_false", help="No progress bar for files.")
    args = parser.parse_args(argv)
    if args.src == args.tgt:
        parser.error(f"--src and --tgt are both {args.src!r}; zhen translates between en and zh.")
    if args.input is not None and not Path(args.input).is_file():
        parser.error(f"input file not found: {args.input}")
    for name in ("beams", "batch_size", "max_new_tokens", "max_source_tokens"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    args.error = parser.error
    return args


def read_chunks(lines, chunk_size: int):
    """Lists of up to `chunk_size` lines, without line endings."""
    lines = (line.rstrip("\r\n") for line in lines)
    while chunk := list(islice(lines, chunk_size)):
        yield chunk


def main(argv=None) -> None:
    args = parse_args(argv)
    try:
        model, tokenizer = load_model_and_tokenizer(args.model, args.tokenizer, device=args.device, int8=args.int8)
    except (OSError, ValueError) as error:
        args.error(str(error))
    with ExitStack() as stack:
        source = stack.enter_context(open(args.input, encoding="utf-8")) if args.input else sys.stdin
        target = stack.enter_context(open(args.output, "w", encoding="utf-8")) if args.output else sys.stdout
        interactive = args.input is None and sys.stdin.isatty()
        chunk_size = 1 if interactive else args.batch_size * LINES_PER_CHUNK
        bar = _progress_bar(args.input) if args.input and args.progress else None
        line_number = 0
        for chunk in read_chunks(source, chunk_size):
            first_line = line_number + 1

            def warn(index, num_tokens, limit, first_line=first_line):
                logger.warning(
                    f"line {first_line + index}: {num_tokens} tokens, more than the {limit} the model reads; "
                    "translated its start only."
                )

            translations = translate(
                chunk,
                model,
                tokenizer,
                src_lang=args.src,
                tgt_lang=args.tgt,
                num_beams=args.beams,
                batch_size=args.batch_size,
                max_new_tokens=args.max_new_tokens,
                max_source_tokens=args.max_source_tokens,
                on_truncate=warn,
            )
            target.writelines(" ".join(text.splitlines()) + "\n" for text in translations)
            target.flush()
            line_number += len(chunk)
            if bar is not None:
                bar.update(len(chunk))
        if bar is not None:
            bar.close()


def _progress_bar(path):
    from tqdm.auto import tqdm

    with open(path, encoding="utf-8") as file:
        total = sum(1 for _ in file)
    return tqdm(total=total, desc="Translating", unit="line")


if __name__ == "__main__":
    main()
