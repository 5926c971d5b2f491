"""`zhen-translate --workers N`: translation in spawned worker processes (`zhen.translation_workers`) gives the lines
one process gives, names truncated lines and bad checkpoints as it does, and stops with the fix where a worker dies."""

import os
import signal
import time

import pytest
import torch

from zhen import translate
from zhen.commands import translate as command
from zhen.translation_workers import TranslationWorkers, batches_longest_first


def run(argv):
    with pytest.raises(SystemExit) as ended:
        command.main(argv)
    return ended.value.code


def test_batches_longest_first_cover_every_text_once():
    texts = ["a", "ccc", "", "bb", "dddd", "e"]
    indices, batches = batches_longest_first(texts, 4)
    assert indices == [[4, 1, 3, 0], [5, 2]]
    assert batches == [["dddd", "ccc", "bb", "a"], ["e", ""]]


def test_workers_translate_a_file_as_one_process_does(tiny_checkpoint, tiny_pairs, tmp_path, capfd, caplog):
    english = [en for en, _ in tiny_pairs]
    lines = [*english[:7], "", english[7] + " " + " ".join(english), *english[8:]]  # a blank line, a long one
    source = tmp_path / "in.txt"
    source.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    outputs = {}
    for name, extra in (("one process", []), ("workers", ["--workers", "2"])):
        outputs[name] = tmp_path / f"{name}.txt"
        command.main(["--model", tiny_checkpoint, "--tgt", "zh", "-i", source, "-o", outputs[name], "--no-progress",
                      "--device", "cpu", "--batch-size", "3", "--max-source-tokens", "40", *extra])  # fmt: skip
        logged = caplog.text if name == "one process" else capfd.readouterr().err  # a worker logs to its stderr
        assert "line 9: 197 tokens, more than the 40 the model reads" in logged  # the long line, by its number
    translated = outputs["workers"].read_text(encoding="utf-8").splitlines()
    assert translated == outputs["one process"].read_text(encoding="utf-8").splitlines()
    assert len(translated) == len(lines) and translated[7] == ""
    assert translated[:7] == translate(english[:7], str(tiny_checkpoint), tgt_lang="zh")


def test_workers_name_a_bad_checkpoint_as_one_process_does(tmp_path, capfd):
    source = tmp_path / "in.txt"
    source.write_text("Hello.\n", encoding="utf-8")
    errors = []
    for extra in ([], ["--workers", "2"]):
        argv = ["--model", tmp_path, "--tgt", "zh", "-i", source, "--no-progress", "--device", "cpu", *extra]
        assert run(argv) == 2
        errors.append(capfd.readouterr().err.strip().splitlines()[-1])
    assert errors[0] == errors[1] and "is not a zhen checkpoint" in errors[0]


@pytest.mark.parametrize(
    "extra,message",
    [(["--device", "cuda"], "--workers translates on the CPU"), (["--streams", "2"], "--workers and --streams")],
)
def test_workers_refuse_what_they_cannot_do(extra, message, capfd, monkeypatch):
    monkeypatch.setattr(command, "device_argument", str)  # as on a machine with a GPU
    assert run(["--model", "M", "--tgt", "zh", "--workers", "2", *extra]) == 2
    assert message in capfd.readouterr().err


def test_a_worker_that_dies_stops_the_translation_with_the_fix(tiny_checkpoint):
    with TranslationWorkers(tiny_checkpoint, None, count=2, threads=1) as workers:
        assert list(workers.translate_batches([["Hello."], ["Thank you."]], tgt_lang="zh"))
        pid, process = next(iter(workers.pool._processes.items()))
        os.kill(pid, signal.SIGKILL)
        process.join(timeout=30)
        time.sleep(0.5)  # the pool's manager thread sees it gone
        with pytest.raises(RuntimeError, match="worker process ended unexpectedly.*without --workers"):
            workers.translate_lines(["Hello."] * 4, tgt_lang="zh")


@pytest.mark.parametrize("packing", ["mkl", "onednn"])
def test_a_worker_packs_float32_weights_as_its_parent_chose(tiny_checkpoint, packing, monkeypatch):
    """Each process measures which library packs float32 weights faster; a worker takes its parent's choice, so that
    every worker translates as the parent would."""
    from zhen import hardware, translation_workers
    from zhen.session_modules import PackedLinear

    if "off" in (hardware.detected().mkl_packing, hardware.detected().onednn_packing):
        pytest.skip("this PyTorch build lacks MKL or oneDNN")
    monkeypatch.setattr(translation_workers, "_WORKER", translation_workers.types.SimpleNamespace(error=None))
    monkeypatch.setattr(translation_workers.signal, "signal", lambda *args: None)  # as the worker: not this process
    monkeypatch.setattr(translation_workers.logging, "disable_progress_bar", lambda: None)
    threads = torch.get_num_threads()
    try:
        with hardware.forced(cpu_bf16="emulated"):
            translation_workers._start_worker(str(tiny_checkpoint), None, 1, False, packing)
        worker = translation_workers._WORKER
        assert worker.error is None and worker.session.weights == "packed"
        packed = [m for m in worker.model.modules() if isinstance(m, PackedLinear)]
        assert packed and all((m.mkl is not None) == (packing == "mkl") for m in packed)
        worker.session.__exit__()
    finally:
        torch.set_num_threads(threads)
