# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
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

Input must be UTF-8 text: a line that is not (or holds a NUL byte, as binary files do) stops the run with its line
number, before any work for an input file. An output file is written under a temporary name and renamed when complete,
so a failed run leaves an existing output as it was; an output that is the input, or a file of the checkpoint, is
refused.

`--workers N` translates in N worker processes on the CPU (`zhen.translation_workers`), each with its own copy of the
model: faster than the decoding streams of one process on long files, after a few seconds of start-up.
"""

import os
import sys
from contextlib import ExitStack
from itertools import islice

from transformers.utils import logging

from ..hardware import GREEDY_BATCH_SIZE, decoding_streams, read_ahead_batches
from ..safe_io import atomic_write, check_output_file
from ..text_checks import decode_line
from ..translation import DEFAULT_BATCH_SIZE, load_model_and_tokenizer, translate
from ..translation_workers import TranslationWorkers, truncation_message
from ._cli import (
    add_int8_argument,
    command,
    default_device,
    device_argument,
    language_argument,
    make_parser,
    positive_int,
)


logger = logging.get_logger("zhen.translate")


def parse_args(argv=None):
    parser = make_parser(
        "zhen-translate",
        "Translate lines of text between English and Chinese with a zhen checkpoint: one line in, one line out, "
        "streaming from standard input when no input file is given.",
    )
    parser.add_argument("--model", required=True, help="Checkpoint folder or Hub id (owner/name).")
    parser.add_argument("--tokenizer", help="Tokenizer folder, if not the model's.")
    parser.add_argument("--src", type=language_argument, help="Source language, en or zh (default: not --tgt).")
    parser.add_argument("--tgt", type=language_argument, required=True, help="Target language, en or zh.")
    parser.add_argument("-i", "--input", help="Input file, UTF-8, one text per line (default: standard input).")
    parser.add_argument("-o", "--output", help="Output file, replaced only when complete (default: standard output).")
    parser.add_argument("--beams", type=positive_int, help="Beam size (default: the checkpoint's generation config).")
    parser.add_argument(
        "--batch-size", type=positive_int,
        help="Lines per batch (default: 64; greedy search in a float32 or bf16 session on a CPU up to 128 while each "
        "stream gets four batches; 64 with --workers).",
    )  # fmt: skip
    parser.add_argument(
        "--max-new-tokens", type=positive_int, help="Most tokens per translation (default: 1.5 × source + 10)."
    )
    parser.add_argument(
        "--max-source-tokens", type=positive_int, help="Truncate longer lines (default: the model's position table)."
    )
    parser.add_argument(
        "--streams", type=positive_int, help="Batches decoded at once (default: on a CPU one per thread, at most 4)."
    )
    parser.add_argument(
        "--workers",
        type=positive_int,
        help="Translate in N worker processes on the CPU, each with its own copy of the model and a share of the "
        "threads: faster on long files than the streams of one process; each takes seconds to start.",
    )
    parser.add_argument("--device", type=device_argument, default=default_device(), help="cpu, cuda, cuda:1, mps...")
    add_int8_argument(parser)
    parser.add_argument("--no-progress", dest="progress", action="store_false", help="No progress bar for files.")
    args = parser.parse_args(argv)
    if args.src == args.tgt:
        parser.error(f"--src and --tgt are both {args.src!r}; zhen translates between en and zh.")
    if args.input is not None and not os.path.isfile(args.input):
        parser.error(f"input file not found: {args.input}")
    if args.workers and args.device != "cpu":
        parser.error(f"--workers translates on the CPU; drop it to translate on {args.device}.")
    if args.workers and args.streams:
        parser.error("--workers and --streams: each worker decodes one batch at a time; choose one.")
    return args


def read_chunks(lines, chunk_size: int):
    """Lists of up to `chunk_size` lines, without line endings."""
    lines = (line.rstrip("\r\n") for line in lines)
    while chunk := list(islice(lines, chunk_size)):
        yield chunk


def decoded_lines(raw_lines, source: str):
    """The lines of a binary stream as text, stopping at the first that is not UTF-8 text (naming it)."""
    for number, raw in enumerate(raw_lines, 1):
        yield decode_line(raw, number, source)


def count_valid_lines(path: str) -> int:
    """Check every line of an input file before any work, and count them (for the progress bar)."""
    with open(path, "rb") as file:
        return sum(1 for _ in decoded_lines(file, path))


@command("zhen-translate")
def main(argv=None) -> None:
    args = parse_args(argv)
    if args.output:
        check_output_file(args.output, [args.input], [args.model, args.tokenizer], flag="-o/--output")
    total = count_valid_lines(args.input) if args.input else None
    if args.workers:
        workers = TranslationWorkers(args.model, args.tokenizer, args.workers, int8=args.int8)
        model = tokenizer = None  # loaded by each worker
    else:
        workers = None
        model, tokenizer = load_model_and_tokenizer(args.model, args.tokenizer, device=args.device, int8=args.int8)
    with ExitStack() as stack:
        if workers is not None:
            stack.enter_context(workers)
        if args.input:
            lines = decoded_lines(stack.enter_context(open(args.input, "rb")), args.input)
        else:
            lines = _stdin_lines()
        target = stack.enter_context(atomic_write(args.output)) if args.output else sys.stdout
        interactive = args.input is None and sys.stdin.isatty()
        streams = args.workers or args.streams or decoding_streams(model.device)
        chunk_size = 1 if interactive else (args.batch_size or GREEDY_BATCH_SIZE) * read_ahead_batches(streams)
        bar = _progress_bar(total) if args.input and args.progress else None
        line_number = 0
        for chunk in read_chunks(lines, chunk_size):
            first_line = line_number + 1

            def warn(index, num_tokens, limit, first_line=first_line):
                logger.warning(truncation_message(first_line + index, num_tokens, limit))

            options = dict(src_lang=args.src, tgt_lang=args.tgt, num_beams=args.beams,
                           max_new_tokens=args.max_new_tokens, max_source_tokens=args.max_source_tokens)  # fmt: skip
            if workers is not None:
                batch_size = args.batch_size or DEFAULT_BATCH_SIZE
                translations = workers.translate_lines(chunk, first_line, batch_size, **options)
            else:
                translations = translate(chunk, model, tokenizer, batch_size=args.batch_size, on_truncate=warn,
                                         streams=args.streams, **options)  # fmt: skip
            target.writelines(" ".join(text.splitlines()) + "\n" for text in translations)
            target.flush()
            line_number += len(chunk)
            if bar is not None:
                bar.update(len(chunk))
        if bar is not None:
            bar.close()


def _stdin_lines():
    """Standard input as text lines; read as bytes where possible, so that a line that is not UTF-8 is named."""
    buffer = getattr(sys.stdin, "buffer", None)
    return decoded_lines(buffer, "standard input") if buffer is not None else iter(sys.stdin)


def _progress_bar(total: int):
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="Translating", unit="line")


if __name__ == "__main__":
    main()
