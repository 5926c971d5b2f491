# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""What every `zhen-*` command shares: help that shows defaults, `--debug`, argument types that check ranges, and one
way of reporting an error a user can cause.

Such an error (a `ValueError` or `OSError`: bad data, a missing file, a refused output, a bad configuration value, a
Hub error; an `ImportError` of an optional package; running out of GPU memory) is printed as one line,
`zhen-xxx: error: <problem and fix>`, and the command exits with status 2, as argparse does for bad arguments. The
traceback is printed too with `--debug` or with the environment variable `ZHEN_DEBUG=1`. Anything else is a bug in
zhen and keeps its traceback.
"""

import argparse
import functools
import os
import re
import sys
import traceback
from collections.abc import Callable

import torch

from ..tokenization_zhen import normalize_lang


DEBUG_ENV = "ZHEN_DEBUG"
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
# CorpusError, UnsafeOutputError, FileNotFoundError, HfHubHTTPError, ...; ImportError: a missing optional package
USER_ERRORS = (ValueError, OSError, ImportError)


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Appends `(default: ...)` to options whose help does not already say, except where there is nothing to say:
    no default, or an on/off flag (`--int8`, `--no-progress`), which is off unless given."""

    def _get_help_string(self, action):
        text = action.help or ""
        no_default = action.default in (None, argparse.SUPPRESS) or action.default == []
        if "default" in text.lower() or no_default or action.nargs == 0:
            return text
        return super()._get_help_string(action)


def make_parser(prog: str, description: str) -> argparse.ArgumentParser:
    """An `ArgumentParser` for a zhen command, with defaults in `--help` and the `--debug` flag."""
    parser = argparse.ArgumentParser(prog=prog, description=description, formatter_class=HelpFormatter)
    add_debug_argument(parser)
    return parser


def add_debug_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--debug",
        action="store_true",
        default=argparse.SUPPRESS,
        help=f"Print the full traceback of an error (also with the environment variable {DEBUG_ENV}=1).",
    )


def debug_requested(argv: list[str]) -> bool:
    return "--debug" in argv or os.environ.get(DEBUG_ENV, "").strip().lower() not in ("", "0", "false", "no")


def error_message(error: BaseException) -> str:
    """One line saying what went wrong: the error's own message, with the file for a bare OS error."""
    if isinstance(error, OSError) and error.strerror and (not error.args or len(error.args) == 2):
        message = error.strerror + (f": {error.filename}" if error.filename else "")
    else:
        message = str(error) or type(error).__name__
    return re.sub(r"\s*\n\s*", " ", message.strip())


def command(prog: str) -> Callable:
    """
    Decorate the `main(argv)` of a command so that user errors end it with one readable line and exit status 2.

    `main` receives the argument list (`sys.argv[1:]` when called with `None`).
    """

    def decorate(main: Callable) -> Callable:
        @functools.wraps(main)
        def run(argv: list[str] | None = None):
            argv = sys.argv[1:] if argv is None else [str(arg) for arg in argv]
            debug = debug_requested(argv)
            try:
                return main(argv)
            except KeyboardInterrupt:
                if debug:
                    raise
                print(f"{prog}: interrupted", file=sys.stderr)
                raise SystemExit(EXIT_INTERRUPTED) from None
            except USER_ERRORS as error:
                report(prog, error, debug)
            except Exception as error:
                if type(error).__name__ != "OutOfMemoryError":  # torch's, a RuntimeError: the user can fix it
                    raise
                report(prog, MemoryError(f"{error_message(error)} Lower the batch size or --max-tokens."), debug)

        return run

    return decorate


def report(prog: str, error: BaseException, debug: bool) -> None:
    """Print `error` as one line (after its traceback with `debug`) and exit with status 2."""
    sys.stdout.flush()
    if debug:
        traceback.print_exc()
    print(f"{prog}: error: {error_message(error)}", file=sys.stderr)
    raise SystemExit(EXIT_USAGE)


# --------------------------------------------------------------------------------------------------------------------
# argparse types that check ranges


def _number(kind: type, low: float, inclusive: bool, description: str) -> Callable[[str], float]:
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {description}") from None
        if value != value or value < low or (value == low and not inclusive):  # NaN, or out of range
            raise argparse.ArgumentTypeError(f"{text} is not {description}")
        return value

    parse.__name__ = description  # argparse names the type in its message
    return parse


positive_int = _number(int, 1, True, "a positive integer")
non_negative_int = _number(int, 0, True, "an integer >= 0")
positive_float = _number(float, 0.0, False, "a number > 0")
non_negative_float = _number(float, 0.0, True, "a number >= 0")


def probability(text: str) -> float:
    """A number in [0, 1)."""
    value = non_negative_float(text)
    if value >= 1:
        raise argparse.ArgumentTypeError(f"{text} is not in [0, 1)")
    return value


def device_argument(value: str) -> str:
    """argparse `type` for `--device`: a device torch knows, and that this machine has."""
    import torch

    try:
        device = torch.device(value)
    except (RuntimeError, ValueError):
        raise argparse.ArgumentTypeError(f"{value!r} is not a device; use cpu, cuda, cuda:1, mps, ...") from None
    if device.type == "cuda":
        count = torch.cuda.device_count()
        if device.index is not None and device.index >= count or not count:
            raise argparse.ArgumentTypeError(
                f"{value}: this machine has {count or 'no'} CUDA GPU{'s' if count != 1 else ''}; use --device cpu"
                + (f" or cuda:0-{count - 1}." if count else ".")
            )
    if device.type == "mps" and not torch.backends.mps.is_available():
        raise argparse.ArgumentTypeError(f"{value}: MPS is not available on this machine; use --device cpu.")
    return value


def add_language_check_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--no-language-check",
        dest="check_languages",
        action="store_false",
        help="Do not stop when the en and zh columns look swapped (by their share of Chinese characters).",
    )


def default_device() -> str:
    """`"cuda"` when a GPU is available, else `"cpu"`: the default `--device` of the command-line tools."""
    return "cuda" if torch.cuda.is_available() else "cpu"


def add_int8_argument(parser: argparse.ArgumentParser) -> None:
    """The `--int8` flag of the command-line tools that translate."""
    parser.add_argument(
        "--int8", action="store_true", help="Run an int8 copy of the model (CPU only): faster, slightly less accurate."
    )


def language_argument(value: str) -> str:
    """argparse `type` for `--src`/`--tgt`: a normalised language code, or a clear error."""
    try:
        return normalize_lang(value)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
