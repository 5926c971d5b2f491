"""Issue 16, runs: one `zhen-train` per output folder (a lock, tested with real processes), a damaged newest checkpoint
is named and skipped, and `--resume` keeps what the run was started with, applying and listing what may change."""

import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from accelerate import Accelerator
from accelerate.state import AcceleratorState
from safetensors.torch import load_file

from zhen import ZhenConfig, ZhenForConditionalGeneration, run_guard, training
from zhen.checkpointing import CheckpointError, checkpoint_problems, load_newest_intact_checkpoint, save_checkpoint
from zhen.commands.train import resolve_config
from zhen.run_guard import LOCK_FILE, OutputDirLock, OutputDirLockedError
from zhen.training import train
from zhen.training_config import (
    CHANGEABLE_ON_RESUME,
    FIELDS,
    FIXED_ON_RESUME,
    TrainingConfig,
    check_resumed_config,
)


TINY = [
    "--preset", "tiny", "--model-overrides", "d_model=64", "encoder_ffn_dim=128", "decoder_ffn_dim=128",
    "--vocab-size", "600", "--max-tokens", "512", "--eval-bleu-samples", "0", "--mixed-precision", "no",
]  # fmt: skip


pytestmark = pytest.mark.usefixtures("fresh_accelerator_state")


# --- one run per output folder ---------------------------------------------------------------------------------------


def test_a_second_zhen_train_into_the_same_folder_is_refused(tmp_path, caplog):
    """Two real `zhen-train` processes: the second is refused, naming the first; once the first is killed, its lock
    is stale and the next run takes it over."""
    output = tmp_path / "run"
    common = ["--output-dir", str(output), *TINY, "--max-steps", "100000", "--eval-steps", "100000"]
    first = subprocess.Popen([sys.executable, "-m", "zhen.commands.train", *common],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not (output / LOCK_FILE).is_file() or not (output / LOCK_FILE).read_text():
            assert first.poll() is None, first.stderr.read()
            assert time.monotonic() < deadline, "the first run never took the lock"
            time.sleep(0.1)
        second = subprocess.run([sys.executable, "-m", "zhen.commands.train", *common],
                                capture_output=True, text=True, timeout=120)  # fmt: skip
        assert second.returncode == 2, second.stderr
        error = second.stderr.strip().splitlines()[-1]
        assert error.startswith("zhen-train: error: Another zhen-train run (pid ") and f"pid {first.pid} " in error
        assert "choose another --output-dir" in error and "Traceback" not in second.stderr
        assert first.poll() is None  # the first run goes on
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    assert json.loads((output / LOCK_FILE).read_text())["pid"] == first.pid  # left behind by kill -9: stale
    with caplog.at_level(logging.WARNING, logger="zhen.run_guard"), OutputDirLock(output):
        assert json.loads((output / LOCK_FILE).read_text())["pid"] == os.getpid()
    assert f"stale lock {output / LOCK_FILE} of pid {first.pid}" in caplog.text
    assert not (output / LOCK_FILE).exists()


def test_the_lock_is_released_when_a_run_fails(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    config = resolve_config(["--train-files", str(empty), "--output-dir", str(tmp_path / "run"), *TINY])
    with pytest.raises(ValueError, match="holds no sentence pairs"):
        train(config)
    assert not (tmp_path / "run" / LOCK_FILE).exists()
    with OutputDirLock(tmp_path / "run"):
        with pytest.raises(OutputDirLockedError, match=f"pid {os.getpid()} on "):
            OutputDirLock(tmp_path / "run").acquire()


def test_exclusive_file_lock_where_flock_is_unavailable(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(run_guard, "fcntl", None)
    lock = OutputDirLock(tmp_path).acquire()
    with pytest.raises(OutputDirLockedError, match="If no such run exists, delete"):
        OutputDirLock(tmp_path).acquire()
    lock.release()
    assert not (tmp_path / LOCK_FILE).exists()

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    record = {"pid": dead.pid, "host": run_guard.socket.gethostname(), "started": "earlier"}
    (tmp_path / LOCK_FILE).write_text(json.dumps(record))
    with caplog.at_level(logging.WARNING, logger="zhen.run_guard"), OutputDirLock(tmp_path):
        assert json.loads((tmp_path / LOCK_FILE).read_text())["pid"] == os.getpid()
    assert f"stale lock {tmp_path / LOCK_FILE} of pid {dead.pid}" in caplog.text


# --- damaged checkpoints ----------------------------------------------------------------------------------------------


def truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def flip_a_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


DAMAGE = {
    "model.safetensors truncated": ("model.safetensors", truncate),
    "optimizer.bin truncated": ("optimizer.bin", truncate),
    "optimizer.bin with a flipped byte": ("optimizer.bin", flip_a_byte),
    "trainer_state.json not JSON": ("trainer_state.json", lambda path: path.write_text('{"step": 3,')),
    "trainer_state.json without a step": ("trainer_state.json", lambda path: path.write_text("[]")),
}


def save_three_checkpoints(directory: Path) -> Accelerator:
    """A real Accelerate model, optimizer and scheduler, checkpointed after steps 1, 2 and 3."""
    torch.manual_seed(0)
    accelerator = Accelerator(cpu=True)
    model = ZhenForConditionalGeneration(ZhenConfig.from_preset("tiny", vocab_size=300))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0)
    model, optimizer = accelerator.prepare(model, optimizer)
    accelerator.register_for_checkpointing(scheduler)
    batch = {"input_ids": torch.tensor([[4, 9, 10, 2]]), "labels": torch.tensor([[5, 11, 12, 2]])}
    for step in (1, 2, 3):
        model(**batch).loss.backward()
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
        save_checkpoint(accelerator, directory, step, {"step": step}, keep=3)
    return accelerator


def test_saving_a_checkpoint_does_not_warn_about_the_tied_weights(tmp_path, caplog):
    """Accelerate's "Removed shared tensor ... check that you don't receive any warning while reloading", at every
    save, is about the tied embeddings and LM head, which load tied again: not a warning for zhen-train's users."""
    with caplog.at_level(logging.WARNING):
        save_three_checkpoints(tmp_path)
    assert "Removed shared tensor" not in caplog.text
    assert not logging.getLogger("accelerate.utils.other").filters  # the filter is gone after the save
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        logging.getLogger("accelerate.utils.other").warning("Removed shared tensor {'x'} while saving.")
    assert "Removed shared tensor" in caplog.text  # other code's warnings are left alone


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_newest_checkpoint_is_named_and_the_previous_one_loads(tmp_path, caplog, damage):
    accelerator = save_three_checkpoints(tmp_path)
    assert checkpoint_problems(tmp_path / "checkpoint-3") == []
    name, spoil = DAMAGE[damage]
    spoil(tmp_path / "checkpoint-3" / name)
    assert [problem.split(":")[0] for problem in checkpoint_problems(tmp_path / "checkpoint-3")] == [name]

    with caplog.at_level(logging.WARNING, logger="zhen.checkpointing"):
        checkpoint, state = load_newest_intact_checkpoint(accelerator, tmp_path)
    assert checkpoint == tmp_path / "checkpoint-2" and state == {"step": 2}
    assert f"Checkpoint {tmp_path / 'checkpoint-3'} is damaged ({name}: " in caplog.text
    assert f"Resuming from {tmp_path / 'checkpoint-2'}, the newest intact checkpoint" in caplog.text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint-1", "checkpoint-2", "checkpoint-3.damaged"]
    expected = load_file(tmp_path / "checkpoint-2" / "model.safetensors")
    loaded = accelerator.unwrap_model(accelerator._models[0]).state_dict()
    for key, tensor in expected.items():
        assert torch.equal(loaded[key], tensor), key


def test_a_checkpoint_that_fails_to_load_is_skipped_too(tmp_path, caplog):
    accelerator = save_three_checkpoints(tmp_path)
    load_state = accelerator.load_state

    def fail_on_the_newest(path):
        if path.endswith("checkpoint-3"):
            raise RuntimeError("size mismatch for model.shared.weight")
        return load_state(path)

    accelerator.load_state = fail_on_the_newest
    with caplog.at_level(logging.WARNING, logger="zhen.checkpointing"):
        checkpoint, _ = load_newest_intact_checkpoint(accelerator, tmp_path)
    assert checkpoint.name == "checkpoint-2" and "loading failed: RuntimeError: size mismatch" in caplog.text


def test_no_intact_checkpoint_is_a_clear_error_that_changes_nothing(tmp_path):
    accelerator = save_three_checkpoints(tmp_path)
    for step in (1, 2, 3):
        truncate(tmp_path / f"checkpoint-{step}" / "model.safetensors")
    with pytest.raises(CheckpointError) as error:
        load_newest_intact_checkpoint(accelerator, tmp_path)
    message = str(error.value)
    assert all(f"checkpoint-{step}: model.safetensors: truncated" in message for step in (1, 2, 3))
    assert "another --output-dir" in message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint-1", "checkpoint-2", "checkpoint-3"]


def test_resume_skips_a_truncated_checkpoint_and_records_the_changed_max_steps(tmp_path, caplog):
    common = ["--output-dir", str(tmp_path), *TINY, "--save-steps", "2", "--eval-steps", "100", "--logging-steps", "2"]
    train(resolve_config([*common, "--max-steps", "6"]))
    truncate(tmp_path / "checkpoints" / "checkpoint-6" / "model.safetensors")
    AcceleratorState._reset_state(True)
    with caplog.at_level(logging.WARNING, logger="zhen"):
        train(resolve_config(["--output-dir", str(tmp_path), "--resume", "--max-steps", "8"]))
    assert "checkpoint-6 is damaged (model.safetensors: truncated" in caplog.text
    assert "Resuming from" in caplog.text and "checkpoint-4, the newest intact checkpoint" in caplog.text
    assert "Resuming with changed settings, applied from here on and recorded: max_steps 6 -> 8" in caplog.text
    names = sorted(p.name for p in (tmp_path / "checkpoints").iterdir())
    assert names == ["checkpoint-4", "checkpoint-6", "checkpoint-6.damaged", "checkpoint-8"]
    for recorded in (tmp_path / "training_config.json", tmp_path / "model" / "training_config.json"):
        values = json.loads(recorded.read_text())
        assert values["max_steps"] == 8 and values["resume"] is True and values["learning_rate"] == 0.002


# --- changed settings on resume -------------------------------------------------------------------------------------


def test_every_setting_is_either_fixed_or_changeable_on_resume():
    assert not FIXED_ON_RESUME & CHANGEABLE_ON_RESUME
    assert FIXED_ON_RESUME | CHANGEABLE_ON_RESUME | {"output_dir", "resume"} == set(FIELDS)


@pytest.fixture
def recorded_run(tmp_path):
    data = tmp_path / "train.jsonl"
    data.write_text(json.dumps({"en": "Hi.", "zh": "你好。"}, ensure_ascii=False) + "\n")
    output = tmp_path / "run"
    output.mkdir()
    config = TrainingConfig(train_files=[str(data)], output_dir=str(output), preset="tiny", max_steps=100)
    config.tokenizer = str(output / "tokenizer")  # as the run recorded it after training its tokenizer
    (output / "tokenizer").mkdir()
    config.save(output / "training_config.json")
    return output, data


def test_resume_takes_the_recorded_settings(recorded_run, monkeypatch):
    output, data = recorded_run
    monkeypatch.chdir(data.parent)
    recorded = json.loads((output / "training_config.json").read_text())
    config = resolve_config(["--output-dir", str(output), "--resume"])
    assert config.train_files == [str(data)] and config.preset == "tiny" and config.max_steps == 100
    assert check_resumed_config(config, recorded) == {}
    same_file_another_spelling = resolve_config(["--output-dir", str(output), "--resume", "--train-files", data.name])
    assert check_resumed_config(same_file_another_spelling, recorded) == {}


def test_resume_from_another_folder_finds_the_run_s_own_tokenizer(recorded_run, tmp_path, monkeypatch):
    output, data = recorded_run
    monkeypatch.chdir(output.parent)
    config = TrainingConfig(train_files=[data.name], output_dir=output.name, preset="tiny", max_steps=100)
    config.tokenizer = str(Path(output.name) / "tokenizer")  # recorded relative to where the run started
    config.save(output / "training_config.json")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    resumed = resolve_config(["--output-dir", str(output), "--resume", "--train-files", str(data)])
    assert resumed.tokenizer is None  # training finds output_dir/tokenizer, wherever it is started from
    assert check_resumed_config(resumed, json.loads((output / "training_config.json").read_text())) == {}
    resumed.check_files()


@pytest.mark.parametrize(
    ("flags", "listed"),
    [
        (["--learning-rate", "0.1"], ["learning_rate: recorded 0.0007, given 0.1"]),
        (["--vocab-size", "8000", "--preset", "small"], ["vocab_size: recorded 32000, given 8000",
                                                         "preset: recorded 'tiny', given 'small'"]),
        (["--model-overrides", "d_model=128"], ["model_overrides: recorded {}, given {'d_model': 128}"]),
        (["--seed", "7", "--max-tokens", "1024"], ["seed: recorded 42", "max_tokens: recorded 4096, given 1024"]),
    ],
)  # fmt: skip
def test_resume_refuses_changes_to_what_the_run_was_started_with(recorded_run, monkeypatch, flags, listed):
    output, _ = recorded_run
    monkeypatch.setattr(training, "prepare_data", lambda *args: pytest.fail("refused only after data preparation"))
    with pytest.raises(ValueError, match="--resume cannot change what the run") as error:
        train(resolve_config(["--output-dir", str(output), "--resume", *flags]))
    assert all(item in str(error.value) for item in listed), str(error.value)
    assert "another --output-dir" in str(error.value)


def test_resume_refuses_other_training_files(recorded_run, tmp_path):
    output, _ = recorded_run
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"en": "Bye.", "zh": "再见。"}, ensure_ascii=False) + "\n")
    config = resolve_config(["--output-dir", str(output), "--resume", "--train-files", str(other)])
    with pytest.raises(ValueError, match=r"train_files: recorded \[.*train\.jsonl'\], given \[.*other\.jsonl'\]"):
        check_resumed_config(config, json.loads((output / "training_config.json").read_text()))
    same_name = tmp_path / "elsewhere" / "train.jsonl"  # another file of the same name
    same_name.parent.mkdir()
    same_name.write_text(other.read_text())
    config = resolve_config(["--output-dir", str(output), "--resume", "--train-files", str(same_name)])
    with pytest.raises(ValueError, match="train_files: recorded"):
        check_resumed_config(config, json.loads((output / "training_config.json").read_text()))


def test_resume_applies_and_lists_schedule_changes(recorded_run, caplog):
    output, _ = recorded_run
    config = resolve_config(["--output-dir", str(output), "--resume", "--max-steps", "300", "--eval-steps", "50"])
    with caplog.at_level(logging.WARNING, logger="zhen.training_config"):
        changes = check_resumed_config(config, json.loads((output / "training_config.json").read_text()))
    assert changes == {"max_steps": (100, 300), "eval_steps": (1000, 50)}
    assert "max_steps 100 -> 300, eval_steps 1000 -> 50" in caplog.text
