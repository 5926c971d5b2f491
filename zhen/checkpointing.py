"""Resumable checkpoints that a crash cannot corrupt, their rotation, and checkpoint averaging.

A checkpoint is written under a temporary name and renamed into place only once complete, with its
`trainer_state.json` written last; a directory without that file is never read. So `kill -9` during a save leaves the
previous checkpoints intact, and `--resume` picks the newest complete one.
"""

import json
import os
import re
import shutil
from pathlib import Path

import torch
from safetensors.torch import load_file


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


def save_checkpoint(accelerator, directory: str | Path, step: int, state: dict, keep: int) -> Path:
    """Save model, optimizer, scheduler and RNG states (all processes) plus `state` (main process), atomically,
    then delete all but the `keep` newest checkpoints."""
    directory = Path(directory)
    tmp, final = directory / f".{PREFIX}{step}.tmp", directory / f"{PREFIX}{step}"
    if accelerator.is_main_process:
        directory.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(tmp, ignore_errors=True)  # left over from a crash during an earlier save
    accelerator.wait_for_everyone()
    accelerator.save_state(str(tmp))
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
