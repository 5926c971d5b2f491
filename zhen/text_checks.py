# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""Input text that cannot be translated, found before the tokenizer sees it and reported with where it is.

The tokenizer takes any valid Unicode string, special-token strings such as `"<s>"` included (they are text). It
cannot take a lone surrogate (`"\\ud800"`, which JSON escapes and undecodable command-line bytes produce), and a
line of a text file can be something that is not text at all: bytes that are not UTF-8, or a NUL byte (a binary
file).
"""

import re


_SURROGATE = re.compile("[\ud800-\udfff]")


class InvalidTextError(ValueError):
    """Text that is not valid Unicode, or a line that is not UTF-8 text."""


def lone_surrogate(text: str) -> int | None:
    """The position of the first lone surrogate in `text` (never valid Unicode), or `None`."""
    match = _SURROGATE.search(text)
    return match.start() if match else None


def check_text(text: str, where: str) -> None:
    """
    Raise [`InvalidTextError`] if `text` holds a lone surrogate, naming `where` it is (e.g. `"texts[3]"`).
    """
    position = lone_surrogate(text)
    if position is not None:
        raise InvalidTextError(
            f"{where} holds a lone surrogate {text[position]!r} at character {position + 1}, which is not valid "
            "Unicode (a broken JSON \\u escape or undecodable bytes?). Fix or remove it."
        )


def decode_line(raw: bytes, number: int, source: str) -> str:
    """
    Line `number` of `source` as text, without its line ending (and a byte-order mark on line 1).

    Raises:
        [`InvalidTextError`] for a NUL byte (a binary file) or bytes that are not UTF-8, naming the line.
    """
    raw = raw.rstrip(b"\r\n")
    nul = raw.find(b"\x00")
    if nul >= 0:
        raise InvalidTextError(
            f"{source}, line {number}: holds a NUL byte at column {nul + 1}; this looks like a binary "
            "file. Give UTF-8 text, one sentence per line."
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InvalidTextError(
            f"{source}, line {number}: not valid UTF-8 (byte 0x{raw[error.start]:02x} at column {error.start + 1}). "
            "Convert the file to UTF-8, e.g. `iconv -f GB18030 -t UTF-8 in.txt > in.utf8.txt`."
        ) from None
    return text.removeprefix("\ufeff") if number == 1 else text


__all__ = ["InvalidTextError", "check_text", "decode_line", "lone_surrogate"]
