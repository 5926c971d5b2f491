# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""Writing results without ever losing what was there: atomic output files and folders, and outputs that name inputs.

Every file or folder a zhen command writes is first written under a temporary name in the same folder and renamed
into place only once complete, so a failure (a bad input line, `Ctrl-C`, a full disk) leaves an existing output as it
was. Before any work, the outputs are compared with the inputs: an output that is an input, lies inside an input
folder or contains one is refused, whatever `--force`/`--overwrite` say. A folder is only ever replaced when it holds
nothing but what the command itself writes (a tokenizer, a CTranslate2 export, a zhen checkpoint).
"""

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path


TOKENIZER_FILES = frozenset(
    {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "tokenization_zhen.py",
     "chat_template.jinja"}
)  # fmt: skip
CT2_FILES = frozenset(
    {"model.bin", "config.json", "shared_vocabulary.json", "shared_vocabulary.txt", "source_vocabulary.json",
     "source_vocabulary.txt", "target_vocabulary.json", "target_vocabulary.txt", "vocabulary.json", "vocabulary.txt"}
)  # fmt: skip


class UnsafeOutputError(ValueError):
    """An output that would overwrite an input or something the command did not create; nothing was written."""


# --------------------------------------------------------------------------------------------------------------------
# Comparing outputs with inputs


def same_path(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    """Whether `a` and `b` name the same file or folder (through symbolic and hard links too)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def is_within(path: str | os.PathLike, folder: str | os.PathLike) -> bool:
    """Whether `path` is `folder` or lies somewhere inside it."""
    path, folder = Path(os.path.realpath(path)), Path(os.path.realpath(folder))
    return path == folder or folder in path.parents


def check_output_file(
    output: str | os.PathLike,
    input_files: Iterable[str | os.PathLike | None] = (),
    input_folders: Iterable[str | os.PathLike | None] = (),
    flag: str = "",
) -> None:
    """
    Refuse an output file that is one of `input_files`, an existing file inside one of `input_folders` (a checkpoint
    that would lose a file), or a folder.

    Args:
        flag (`str`, *optional*): The option that named the output, for the message (e.g. `"-o/--output"`).

    Raises:
        [`UnsafeOutputError`] naming the clash and the fix.
    """
    flag = f"{flag} {output}".strip() if flag else f"The output {output}"
    if os.path.isdir(output):
        raise UnsafeOutputError(f"{flag} is a folder; name a file to write.")
    for source in filter(None, input_files):
        if os.path.exists(source) and same_path(output, source):
            raise UnsafeOutputError(
                f"{flag} is the input file {source}: writing it would destroy the input. Name another output file."
            )
    for folder in filter(None, input_folders):
        if os.path.isdir(folder) and os.path.exists(output) and is_within(output, folder):
            raise UnsafeOutputError(
                f"{flag} is a file of the input folder {folder}: writing it would damage that checkpoint. Write the "
                "output elsewhere."
            )


def check_output_folder(
    output: str | os.PathLike,
    inputs: Iterable[str | os.PathLike | None] = (),
    flag: str = "",
) -> None:
    """
    Refuse an output folder that is an input (file or folder), lies inside an input folder or contains an input.

    Raises:
        [`UnsafeOutputError`] naming the clash and the fix.
    """
    name = f"{flag} {output}" if flag else f"The output folder {output}"
    for source in filter(None, inputs):
        if not os.path.exists(source):
            if os.path.normpath(str(source)) == os.path.normpath(str(output)):  # e.g. the same Hub id
                raise UnsafeOutputError(f"{name} is also the input {source}; choose another output folder.")
            continue
        if same_path(output, source):
            relation = "is"
        elif os.path.isdir(source) and is_within(output, source):
            relation = "lies inside"
        elif is_within(source, output):
            relation = "contains"
        else:
            continue
        raise UnsafeOutputError(
            f"{name} {relation} the input {source}: writing there could destroy it. Choose another "
            "output folder (nothing was written)."
        )


def is_clearly_a_path(name: str) -> bool:
    """Whether `name` can only be a local path, not a Hub repo id: it exists, starts with `.`, `/` or `~`, has more
    than one `/`, a backslash (on Windows) or a drive."""
    other_separators = {os.sep, os.altsep} - {None, "/"}
    return (
        os.path.exists(name)
        or name.startswith((".", "/", "~"))
        or name.count("/") > 1
        or any(separator in name for separator in other_separators)
        or bool(os.path.splitdrive(name)[0])
    )


def folder_contents(folder: str | os.PathLike) -> list[str]:
    """Names in `folder` (empty if it does not exist)."""
    return sorted(os.listdir(folder)) if os.path.isdir(folder) else []


def is_zhen_checkpoint(folder: str | os.PathLike) -> bool:
    """Whether `folder` holds a zhen checkpoint (its `config.json` says `model_type: zhen`)."""
    try:
        config = json.loads(Path(folder, "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(config, dict) and config.get("model_type") == "zhen"


def check_replaceable_folder(
    output: str | os.PathLike,
    overwrite: bool,
    *,
    allowed: frozenset[str],
    required: str,
    what: str,
    flag: str,
    looks_right: Callable[[Path], bool] | None = None,
) -> None:
    """
    Refuse to write to an existing, non-empty `output` folder unless `overwrite` is set and the folder holds only what
    this command writes: files named in `allowed`, among them `required`, and (if given) `looks_right(folder)`.

    Args:
        what (`str`): What the command writes, for the message ("a tokenizer", "a CTranslate2 export").
        flag (`str`): The option that allows replacing it ("--overwrite", "--force").
    """
    output = Path(output)
    if output.exists() and not output.is_dir():
        raise UnsafeOutputError(f"{output} is a file, not a folder; choose another output folder.")
    contents = folder_contents(output)
    if not contents:
        return
    foreign = [name for name in contents if name not in allowed or (output / name).is_dir()]
    if not foreign and (required not in contents or (looks_right is not None and not looks_right(output))):
        foreign = contents
    if foreign:
        foreign.sort(key=lambda name: -(output / name).stat().st_size)  # the largest, what one would miss most, first
        shown = ", ".join(foreign[:6]) + (", ..." if len(foreign) > 6 else "")
        raise UnsafeOutputError(
            f"{output} already holds files that are not {what} ({shown}); {flag} never deletes those. Choose another "
            "output folder (nothing was written)."
        )
    if not overwrite:
        raise UnsafeOutputError(
            f"{output} already holds {what}. Pass {flag} to replace it, or choose another output folder (nothing was "
            "written)."
        )


def is_ctranslate2_export(folder: str | os.PathLike) -> bool:
    """Whether `folder`'s config.json is CTranslate2's (not a Hugging Face model's, which names its model type)."""
    try:
        config = json.loads(Path(folder, "config.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        return True
    except (OSError, ValueError):
        return False
    return isinstance(config, dict) and not {"model_type", "architectures"} & set(config)


# --------------------------------------------------------------------------------------------------------------------
# Atomic writes


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """
    A temporary path next to `path`, with the same suffix (so libraries that pick a format by extension still can),
    renamed to `path` when the block ends without an exception and removed otherwise.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=f".tmp{path.suffix}")
    os.close(descriptor)
    tmp = Path(tmp)
    try:
        yield tmp
        _match_permissions(tmp, path)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "w", encoding: str | None = "utf-8", **open_kwargs):
    """
    Open a temporary file next to `path` for writing; when the block ends without an exception it is flushed to disk
    and renamed to `path` (replacing it in one step), otherwise removed. An existing `path` is never left empty or
    half written. A `path` that is not a regular file (`/dev/stdout`, a named pipe) is written directly.

    Example:

    ```python
    >>> with atomic_write("out.txt") as file:
    ...     file.write("translations\\n")
    ```
    """
    if "b" in mode:
        encoding = None
    if os.path.exists(path) and not os.path.isfile(path) and not os.path.isdir(path):  # /dev/stdout, a named pipe
        with open(path, mode, encoding=encoding, **open_kwargs) as file:
            yield file
        return
    with atomic_path(path) as tmp:
        with open(tmp, mode, encoding=encoding, **open_kwargs) as file:
            yield file
            file.flush()
            os.fsync(file.fileno())


def _match_permissions(tmp: Path, path: Path) -> None:
    """`mkstemp` creates files readable by their owner only; give the result what `open(path, "w")` would."""
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    os.chmod(tmp, mode)


@contextlib.contextmanager
def atomic_directory(path: str | os.PathLike) -> Iterator[Path]:
    """
    A fresh folder to fill, named like `path` (so files that record their folder's name, such as a model card, see
    the final name) inside a temporary folder next to `path`. When the block ends without an exception it replaces
    `path`: an old `path` is renamed aside first and deleted only once the new one is in place. On an exception the
    temporary folder is removed and `path` is untouched.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".zhen-tmp-{path.name}."))
    try:
        yield staging / path.name
        new, old = staging / path.name, staging / f"{path.name}.old"
        if not new.is_dir():
            raise FileNotFoundError(f"Nothing was written to {path}.")
        if path.exists():
            os.replace(path, old)
        try:
            os.replace(new, path)
        except OSError:
            if old.exists():
                os.replace(old, path)
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


__all__ = [
    "UnsafeOutputError",
    "atomic_directory",
    "atomic_path",
    "atomic_write",
    "check_output_file",
    "check_output_folder",
    "check_replaceable_folder",
    "is_clearly_a_path",
    "is_ctranslate2_export",
    "is_within",
    "is_zhen_checkpoint",
    "same_path",
]
