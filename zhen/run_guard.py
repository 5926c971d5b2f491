# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""One `zhen-train` run per output folder, and no run that silently replaces an earlier one's results.

[`OutputDirLock`] is held by a run (its main process) from start to end: a second run into the same folder is refused
with the first one's process id and host. The lock is an `fcntl.flock` on `<output_dir>/.zhen-train.lock`, which
records the holder; the kernel releases it when the holder exits, however it exits, so a lock file left behind by a
killed run is stale and taken over (said in the log). Where `flock` is unavailable (Windows, some network file
systems) the file is created with `O_EXCL` instead, and a leftover one is stale when its process is gone from this
host. [`check_earlier_run`] refuses an output folder that holds another run's results unless the run is resumed.
"""

import contextlib
import errno
import json
import logging
import os
import socket
import time
from pathlib import Path


logger = logging.getLogger(__name__)

LOCK_FILE = ".zhen-train.lock"
# What an earlier run leaves in its output folder; `cache/` is keyed by content and safe to share.
RUN_TRACES = ("checkpoints", "model", "best", "averaged", "history.json", "training_config.json", "tokenizer")
FINAL_RESULTS = ("model", "averaged", "history.json")

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None


class OutputDirLockedError(FileExistsError):
    """Another run holds the output folder."""


def is_main_process() -> bool:
    """Rank 0 of a distributed launch (torchrun, `accelerate launch`), or a single process; known before Accelerate
    starts, from the environment the launcher sets."""
    return os.environ.get("RANK", "0") == "0"


def ensure_writable_dir(path: str | Path) -> Path:
    """Create `path` if needed and check that files can be written in it."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / f".write-test-{os.getpid()}"
        probe.write_text("ok")
        probe.unlink()
    except OSError as error:
        raise PermissionError(
            f"Cannot write to output_dir {path}: {error.strerror or error}. Choose another --output-dir."
        ) from error
    return path


class OutputDirLock:
    """
    An exclusive lock on a run's output folder, held by one process (see the module docstring).

    Example:

    ```python
    >>> with OutputDirLock("runs/small"):
    ...     train(config)
    ```
    """

    def __init__(self, output_dir: str | Path):
        self.path = Path(output_dir) / LOCK_FILE
        self._descriptor = None

    def acquire(self) -> "OutputDirLock":
        ensure_writable_dir(self.path.parent)
        if fcntl is not None:
            try:
                return self._acquire_flock()
            except OSError as error:
                if error.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL):
                    raise
        return self._acquire_exclusive_file()

    def release(self) -> None:
        if self._descriptor is None:
            return
        with contextlib.suppress(OSError):
            if self._owns_path():
                self.path.unlink()
        os.close(self._descriptor)
        self._descriptor = None

    def __enter__(self) -> "OutputDirLock":
        return self.acquire()

    def __exit__(self, *exc_info) -> None:
        self.release()

    # --- flock

    def _acquire_flock(self) -> "OutputDirLock":
        while True:
            descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _read_holder(descriptor)
                os.close(descriptor)
                raise OutputDirLockedError(self._held_message(holder)) from None
            except OSError:
                os.close(descriptor)
                raise
            self._descriptor = descriptor
            if self._owns_path():  # else the holder removed the file between our open and lock: try again
                break
            os.close(descriptor)
            self._descriptor = None
        previous = _read_holder(descriptor)
        if previous:
            logger.warning(f"Taking over the stale lock {self.path} of {_describe(previous)}, no longer running.")
        self._write_holder()
        return self

    def _owns_path(self) -> bool:
        try:
            return os.path.samestat(os.fstat(self._descriptor), os.stat(self.path))
        except OSError:
            return False

    # --- O_EXCL, where flock is unavailable

    def _acquire_exclusive_file(self) -> "OutputDirLock":
        for _ in range(2):
            try:
                self._descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                holder = _read_holder_file(self.path)
                if holder and _is_running_here(holder) is False:
                    logger.warning(f"Removing the stale lock {self.path} of {_describe(holder)}, no longer running.")
                    self.path.unlink(missing_ok=True)
                    continue
                raise OutputDirLockedError(self._held_message(holder, stale_hint=True)) from None
            self._write_holder()
            return self
        raise OutputDirLockedError(self._held_message(_read_holder_file(self.path), stale_hint=True))

    # --- the holder's record

    def _write_holder(self) -> None:
        record = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.strftime("%Y-%m-%d %H:%M:%S")}
        os.ftruncate(self._descriptor, 0)
        os.pwrite(self._descriptor, (json.dumps(record) + "\n").encode(), 0)
        os.fsync(self._descriptor)

    def _held_message(self, holder: dict | None, stale_hint: bool = False) -> str:
        who = _describe(holder) if holder else "another process"
        message = (
            f"Another zhen-train run ({who}) is writing to {self.path.parent}. Wait for it to finish, or choose "
            "another --output-dir."
        )
        if stale_hint:
            message += f" If no such run exists, delete {self.path}."
        return message


def _read_holder(descriptor: int) -> dict | None:
    try:
        return _parse_holder(os.pread(descriptor, 4096, 0))
    except OSError:
        return None


def _read_holder_file(path: Path) -> dict | None:
    try:
        return _parse_holder(path.read_bytes())
    except OSError:
        return None


def _parse_holder(data: bytes) -> dict | None:
    try:
        holder = json.loads(data)
    except ValueError:
        return None
    return holder if isinstance(holder, dict) and isinstance(holder.get("pid"), int) else None


def _describe(holder: dict) -> str:
    started = f", started {holder['started']}" if holder.get("started") else ""
    return f"pid {holder['pid']} on {holder.get('host', 'an unknown host')}{started}"


def _is_running_here(holder: dict) -> bool | None:
    """Whether the holder's process runs; `None` when it is on another host and cannot be checked."""
    if holder.get("host") != socket.gethostname():
        return None
    try:
        os.kill(holder["pid"], 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def check_earlier_run(output_dir: str | Path, resume: bool, has_checkpoints: bool) -> None:
    """
    Refuse an output folder that holds another run's results, before any work and without touching them.

    Without `resume`, any trace of an earlier run (checkpoints, an exported `model/`, `best/`, `history.json`,
    `training_config.json`, a trained `tokenizer/`) is refused. With `resume` but no checkpoint to resume from, final
    results (`model/`, `averaged/`, `history.json`) are refused too: starting afresh would replace them.

    Raises:
        `FileExistsError` naming what was found and what to do.
    """
    output_dir = Path(output_dir)
    found = _present(output_dir, RUN_TRACES)
    if not resume and found:
        raise FileExistsError(
            f"{output_dir} holds an earlier run ({', '.join(found)}). Pass --resume to continue it if it is the same "
            "run, or choose another --output-dir (nothing was overwritten)."
        )
    results = _present(output_dir, FINAL_RESULTS)
    if resume and not has_checkpoints and results:
        raise FileExistsError(
            f"{output_dir} holds the results of an earlier run ({', '.join(results)}) but no checkpoint to resume "
            "from, so --resume would start afresh and replace them. Choose another --output-dir, or move those "
            "results away first (nothing was overwritten)."
        )


def _present(folder: Path, names) -> list[str]:
    paths = [folder / name for name in names if (folder / name).exists()]
    return [f"{path.name}/" if path.is_dir() else path.name for path in paths]


__all__ = ["OutputDirLock", "OutputDirLockedError", "check_earlier_run", "ensure_writable_dir", "is_main_process"]
