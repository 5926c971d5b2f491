# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""Resumable checkpoints that a crash cannot corrupt, their rotation, and checkpoint averaging.

A checkpoint is written under a temporary name and renamed into place only once complete, with its
`trainer_state.json` written last; a directory without that file is never read. So `kill -9` during a save leaves the
previous checkpoints intact, and `--resume` picks the newest complete one.

A complete checkpoint can still be damaged afterwards (a full disk, a copy cut short, an edited file).
[`load_newest_intact_checkpoint`] checks every file of the newest checkpoint before loading it (the safetensors header
against the file's length, the zip structure and checksums of the `torch.save` files, the JSON state) and falls back
to the next older one when a file is damaged or loading fails, saying which checkpoint is damaged and why. The damaged
ones are renamed aside (`checkpoint-N.damaged`), so rotation never deletes an intact checkpoint to keep them.
"""

import json
import logging
import os
import re
import shutil
import struct
import zipfile
from collections.abc import Callable
from pathlib import Path

import torch
from safetensors.torch import load_file


logger = logging.getLogger(__name__)


PREFIX = "checkpoint-"
STATE_FILE = "trainer_state.json"
MODEL_FILE = "model.safetensors"  # where Accelerator.save_state puts the (first) model's weights


def checkpoint_steps(directory: str | Path) -> dict[int, Path]:
    """Complete checkpoints in `directory`, by step."""
    found = {}
    for path in Path(directory).glob(PREFIX + "*"):
        match = re.fullmatch(PREFIX + r"(\d+)", path.name)
        if match and (path / STATE_FILE).is_file():
            found[int(match.group(1))] = path
    return dict(sorted(found.items()))


def latest_checkpoint(directory: str | Path) -> Path | None:
    steps = checkpoint_steps(directory)
    return steps[max(steps)] if steps else None


def read_state(checkpoint: str | Path) -> dict:
    return json.loads((Path(checkpoint) / STATE_FILE).read_text())


class CheckpointError(ValueError):
    """No checkpoint to resume from is intact."""


def checkpoint_problems(checkpoint: str | Path) -> list[str]:
    """
    What is wrong with the files of `checkpoint`, as `"<file>: <problem>"`; empty when every file looks intact.

    Checks `trainer_state.json` (a JSON object with a `step`), every `*.safetensors` file (its header, and a length
    that holds every tensor the header lists) and every `*.bin`/`*.pkl` file `Accelerator.save_state` wrote with
    `torch.save` (a zip archive whose members match their CRC-32 checksums). Nothing is unpickled.
    """
    checkpoint = Path(checkpoint)
    problems = []
    try:
        state = read_state(checkpoint)
        if not isinstance(state, dict) or not isinstance(state.get("step"), int):
            problems.append(f"{STATE_FILE}: not a trainer state (no integer 'step')")
    except (OSError, ValueError) as error:
        problems.append(f"{STATE_FILE}: {error}")
    if not (checkpoint / MODEL_FILE).is_file():
        problems.append(f"{MODEL_FILE}: missing")
    for path in sorted(checkpoint.iterdir()):
        if path.suffix == ".safetensors":
            problem = _safetensors_problem(path)
        elif path.suffix in (".bin", ".pkl"):
            problem = _torch_file_problem(path)
        else:
            continue
        if problem:
            problems.append(f"{path.name}: {problem}")
    return problems


def _safetensors_problem(path: Path) -> str | None:
    size = path.stat().st_size
    with open(path, "rb") as file:
        prefix = file.read(8)
        if len(prefix) < 8:
            return f"truncated ({size} bytes)"
        (header_size,) = struct.unpack("<Q", prefix)
        if header_size > size - 8:
            return f"truncated or not safetensors (a header of {header_size} bytes in a file of {size})"
        try:
            header = json.loads(file.read(header_size))
        except ValueError:
            return "unreadable header (not safetensors, or damaged)"
    if not isinstance(header, dict):
        return "unreadable header (not safetensors, or damaged)"
    ends = [entry["data_offsets"][1] for name, entry in header.items() if name != "__metadata__"]
    expected = 8 + header_size + max(ends, default=0)
    if size != expected:
        return f"truncated ({size} of {expected} bytes)" if size < expected else f"{size - expected} bytes too many"
    return None


def _torch_file_problem(path: Path) -> str | None:
    try:
        with zipfile.ZipFile(path) as archive:
            damaged = archive.testzip()
    except (zipfile.BadZipFile, OSError, EOFError, ValueError):
        return "truncated or damaged (not a complete torch.save archive)"
    return f"damaged (checksum mismatch in {damaged})" if damaged else None


def load_newest_intact_checkpoint(
    accelerator, directory: str | Path, make_state: Callable[..., object] = dict
) -> tuple[Path, object] | None:
    """
    Load the newest intact checkpoint in `directory` into `accelerator` (`load_state`) and return `(checkpoint,
    make_state(**trainer_state))`, or `None` when there is no checkpoint.

    A checkpoint whose files are damaged ([`checkpoint_problems`]), or whose loading fails, is skipped with a warning
    that names it and says why; once an older one loads, the skipped ones are renamed aside (`.damaged`) on the main
    process, which is said too.

    Raises:
        [`CheckpointError`] when checkpoints exist but none is intact, listing each with its problem.
    """
    damaged = []
    for checkpoint in reversed(list(checkpoint_steps(directory).values())):
        problems = checkpoint_problems(checkpoint)
        if not problems:
            try:
                accelerator.load_state(str(checkpoint))
                state = make_state(**read_state(checkpoint))
            except Exception as error:  # whatever failed, an older checkpoint may load
                problems = [f"loading failed: {type(error).__name__}: {error}".strip()]
        if problems:
            damaged.append((checkpoint, "; ".join(problems)))
            if accelerator.is_main_process:
                logger.warning(f"Checkpoint {checkpoint} is damaged ({damaged[-1][1]}); trying an older one.")
            continue
        if damaged:
            _set_aside(accelerator, damaged, checkpoint)
        return checkpoint, state
    if damaged:
        listing = "; ".join(f"{path.name}: {problem}" for path, problem in damaged)
        raise CheckpointError(
            f"No intact checkpoint to resume from in {directory} ({listing}). Nothing was changed. Start a new run "
            "with another --output-dir, or move the damaged checkpoints away to start this one afresh."
        )
    return None


def _set_aside(accelerator, damaged: list[tuple[Path, str]], resumed_from: Path) -> None:
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        for path, _ in damaged:
            aside = path.with_name(f"{path.name}.damaged")
            if aside.exists():
                shutil.rmtree(aside)
            os.replace(path, aside)
        names = ", ".join(f"{path.name}.damaged" for path, _ in damaged)
        logger.warning(
            f"Resuming from {resumed_from}, the newest intact checkpoint. The damaged newer one(s) were renamed to "
            f"{names}: the steps after {resumed_from.name} will be trained again."
        )
    accelerator.wait_for_everyone()


def write_json_atomic(path: str | Path, data) -> None:
    """Write JSON through a temporary file and a rename, so readers see the old or the new file, never half."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, ensure_ascii=False)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def replace_directory(tmp: Path, final: Path) -> None:
    """Move a fully written `tmp` directory to `final`, replacing an older `final` without a moment of absence of
    a complete copy on disk (the old one is renamed aside first, and only deleted afterwards)."""
    old = final.with_name(f".{final.name}.old")
    if old.exists():
        shutil.rmtree(old)
    if final.exists():
        os.replace(final, old)
    os.replace(tmp, final)
    _fsync_directory(final.parent)
    if old.exists():
        shutil.rmtree(old)


def _fsync_directory(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class _TiedWeightsNotice(logging.Filter):
    """Accelerate warns at every save that it "removed shared tensor" names and asks to check the reload: those are
    the tied embeddings and LM head, stored once and tied again on load (resume is tested bit for bit)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Removed shared tensor" not in record.getMessage()


def save_checkpoint(accelerator, directory: str | Path, step: int, state: dict, keep: int) -> Path:
    """Save model, optimizer, scheduler and RNG states (all processes) plus `state` (main process), atomically,
    then delete all but the `keep` newest checkpoints."""
    directory = Path(directory)
    tmp, final = directory / f".{PREFIX}{step}.tmp", directory / f"{PREFIX}{step}"
    if accelerator.is_main_process:
        directory.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(tmp, ignore_errors=True)  # left over from a crash during an earlier save
    accelerator.wait_for_everyone()
    notice, accelerate_logger = _TiedWeightsNotice(), logging.getLogger("accelerate.utils.other")
    accelerate_logger.addFilter(notice)
    try:
        accelerator.save_state(str(tmp))
    finally:
        accelerate_logger.removeFilter(notice)
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        write_json_atomic(tmp / STATE_FILE, state)
        replace_directory(tmp, final)
        for path in list(checkpoint_steps(directory).values())[:-keep]:
            shutil.rmtree(path)
    accelerator.wait_for_everyone()
    return final


def average_checkpoints(checkpoints: list[str | Path]) -> dict[str, torch.Tensor]:
    """Element-wise mean of the model weights of `checkpoints` (fairseq's `average_checkpoints.py`)."""
    if not checkpoints:
        raise ValueError("No checkpoints to average.")
    total = None
    for checkpoint in checkpoints:
        weights = load_file(Path(checkpoint) / MODEL_FILE)
        if total is None:
            total = {name: tensor.double() for name, tensor in weights.items()}
        else:
            if weights.keys() != total.keys():
                raise ValueError(f"{checkpoint} holds different weights than {checkpoints[0]}; cannot average them.")
            for name, tensor in weights.items():
                total[name] += tensor.double()
    return {name: (tensor / len(checkpoints)).to(weights[name].dtype) for name, tensor in total.items()}
