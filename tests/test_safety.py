"""Issue 16, data loss: no command overwrites an input, a failed command leaves an existing output as it was, a folder
is only replaced when it holds what the command itself wrote, and an earlier run's results are never replaced."""

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from zhen import safe_io
from zhen.commands import evaluate as evaluate_command
from zhen.commands import finetune as finetune_command
from zhen.commands import plot_attention as plot_command
from zhen.commands import train_tokenizer as tokenizer_command
from zhen.commands import translate as translate_command
from zhen.commands.train import resolve_config
from zhen.data import sample_corpus_path
from zhen.safe_io import UnsafeOutputError, atomic_directory, atomic_write
from zhen.training import train


def fingerprint(folder: Path) -> dict[str, str]:
    """Every file under `folder`, with a hash of its bytes."""
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def fails_with(main, argv, capsys) -> str:
    """Run a command's `main`, expect exit status 2, return its one-line error (progress bars may come before it)."""
    with pytest.raises(SystemExit) as exit_info:
        main([str(arg) for arg in argv])
    assert exit_info.value.code == 2
    stderr = capsys.readouterr().err
    assert "Traceback" not in stderr, stderr
    error = stderr.strip().splitlines()[-1]
    assert error.startswith("zhen-") and ": error: " in error, stderr
    return error


@pytest.fixture
def checkpoint_copy(tiny_checkpoint, tmp_path):
    return Path(shutil.copytree(tiny_checkpoint, tmp_path / "model"))


# --- atomic writes ----------------------------------------------------------------------------------------------------


def test_atomic_write_replaces_only_when_complete(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("precious\n")
    target.chmod(0o640)
    with pytest.raises(RuntimeError), atomic_write(target) as file:
        file.write("half")
        raise RuntimeError("failed mid-way")
    assert target.read_text() == "precious\n" and sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]
    with atomic_write(target) as file:
        file.write("new\n")
    assert target.read_text() == "new\n" and target.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]


def test_atomic_write_writes_devices_and_pipes_directly(tmp_path):
    with atomic_write("/dev/null") as file:
        file.write("discarded")
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_atomic_directory_keeps_the_old_folder_on_failure_and_the_final_name(tmp_path):
    folder = tmp_path / "tok"
    folder.mkdir()
    (folder / "tokenizer.json").write_text("old")
    with pytest.raises(RuntimeError), atomic_directory(folder) as staging:
        staging.mkdir()
        (staging / "tokenizer.json").write_text("half")
        raise RuntimeError
    assert (folder / "tokenizer.json").read_text() == "old"
    with atomic_directory(folder) as staging:
        assert staging.name == "tok"  # a model card that names its folder sees the final name
        staging.mkdir()
        (staging / "tokenizer.json").write_text("new")
    assert (folder / "tokenizer.json").read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tok"]


# --- zhen-translate -------------------------------------------------------------------------------------------------


def test_translate_refuses_an_output_that_is_its_input(tiny_checkpoint, tmp_path, capsys, monkeypatch):
    same = tmp_path / "same.txt"
    same.write_text("I like tea.\n", encoding="utf-8")
    (tmp_path / "sub").mkdir()
    (tmp_path / "link.txt").symlink_to(same)
    monkeypatch.chdir(tmp_path)
    model = ["--model", tiny_checkpoint, "--tgt", "zh", "--device", "cpu"]
    for output in (same, "same.txt", "./sub/../same.txt", "link.txt"):
        error = fails_with(translate_command.main, [*model, "-i", same, "-o", output], capsys)
        assert "is the input file" in error
    assert same.read_text(encoding="utf-8") == "I like tea.\n"


def test_translate_refuses_to_write_into_the_checkpoint(checkpoint_copy, tmp_path, capsys):
    source = tmp_path / "in.txt"
    source.write_text("I like tea.\n")
    before = fingerprint(checkpoint_copy)
    model = ["--model", checkpoint_copy, "--tgt", "zh", "--device", "cpu"]
    error = fails_with(translate_command.main, [*model, "-i", source, "-o", checkpoint_copy / "config.json"], capsys)
    assert "file of the input folder" in error and fingerprint(checkpoint_copy) == before


def test_a_failed_translation_leaves_an_existing_output_untouched(tiny_checkpoint, tmp_path, capsys, monkeypatch):
    source, target = tmp_path / "in.txt", tmp_path / "out.txt"
    target.write_text("earlier results\n", encoding="utf-8")
    source.write_bytes(b"I like tea.\nHello.\n\xff\xfe broken\n")
    argv = ["--model", tiny_checkpoint, "--tgt", "zh", "--device", "cpu", "--no-progress", "-i", source, "-o", target]
    error = fails_with(translate_command.main, argv, capsys)
    assert f"{source}, line 3: not valid UTF-8" in error
    assert target.read_text(encoding="utf-8") == "earlier results\n"

    source.write_text("".join(f"line {i}\n" for i in range(600)), encoding="utf-8")
    calls = []

    def translate_then_fail(chunk, *args, **kwargs):  # the second chunk fails, after the first was written
        calls.append(len(chunk))
        if len(calls) == 2:
            raise ValueError("the model failed on this chunk")
        return ["x"] * len(chunk)

    monkeypatch.setattr(translate_command, "translate", translate_then_fail)
    error = fails_with(translate_command.main, [*argv, "--batch-size", "2"], capsys)
    assert len(calls) == 2 and "the model failed" in error
    assert target.read_text(encoding="utf-8") == "earlier results\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt", "out.txt"]  # no temporary file left


# --- zhen-evaluate --------------------------------------------------------------------------------------------------


def test_evaluate_refuses_hypotheses_over_the_test_file(tiny_checkpoint, tiny_test_file, tmp_path, capsys):
    test = Path(shutil.copy(tiny_test_file, tmp_path / "v2.jsonl"))
    before = test.read_bytes()
    model = ["--model", tiny_checkpoint, "--device", "cpu"]
    error = fails_with(evaluate_command.main, [*model, "--test", test, "--tgt", "zh", "--hyp-out", test], capsys)
    assert "--hyp-out" in error and "is the input file" in error
    both = Path(shutil.copy(tiny_test_file, tmp_path / "v2.en-zh.jsonl"))  # what --both makes of --hyp-out v2.jsonl
    error = fails_with(evaluate_command.main, [*model, "--test", both, "--both", "--hyp-out", test], capsys)
    assert "is the input file" in error
    assert test.read_bytes() == before and both.read_bytes() == before


def test_evaluate_hypotheses_are_replaced_only_when_complete(tiny_checkpoint, tiny_test_file, tmp_path, capsys,
                                                             monkeypatch):  # fmt: skip
    hypotheses = tmp_path / "hyp.txt"
    hypotheses.write_text("earlier hypotheses\n")
    scores = {"bleu": 1.0, "chrf": 1.0, "sentences": 2, "bleu_signature": "-", "chrf_signature": "-"}
    # A hypothesis that cannot be written (not valid Unicode) fails the write half-way.
    monkeypatch.setattr(evaluate_command, "evaluate_model", lambda *a, **k: (scores, ["ok", "bad \ud800"]))
    argv = ["--model", tiny_checkpoint, "--test", tiny_test_file, "--tgt", "zh", "--hyp-out", hypotheses]
    error = fails_with(evaluate_command.main, [*argv, "--device", "cpu"], capsys)
    assert "surrogate" in error and hypotheses.read_text() == "earlier hypotheses\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hyp.txt"]


# --- zhen-export-ct2 ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("force", [False, True])
def test_export_ct2_never_writes_over_the_checkpoint(checkpoint_copy, tmp_path, capsys, force):
    pytest.importorskip("ctranslate2")
    from zhen.commands import export_ct2

    before = fingerprint(tmp_path)
    for output in (checkpoint_copy, checkpoint_copy / "ct2", tmp_path):
        error = fails_with(export_ct2.main, [checkpoint_copy, output, *(["--force"] if force else [])], capsys)
        assert "the input" in error and "Choose another output folder" in error
    assert fingerprint(tmp_path) == before


def test_export_ct2_force_replaces_only_an_earlier_export(checkpoint_copy, tiny_checkpoint, tmp_path, capsys):
    pytest.importorskip("ctranslate2")
    from zhen.commands import export_ct2

    output = tmp_path / "ct2"
    export_ct2.main([str(checkpoint_copy), str(output)])
    assert (output / "model.bin").is_file()
    error = fails_with(export_ct2.main, [checkpoint_copy, output], capsys)
    assert "already holds a CTranslate2 export. Pass --force" in error
    export_ct2.main([str(checkpoint_copy), str(output), "--force"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ct2", "model"]

    other = Path(shutil.copytree(tiny_checkpoint, tmp_path / "another-checkpoint"))  # a Hugging Face checkpoint
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "model.bin").write_text("mine")
    (notes / "todo.txt").write_text("mine")
    before = fingerprint(tmp_path)
    for folder in (other, notes):
        error = fails_with(export_ct2.main, [checkpoint_copy, folder, "--force"], capsys)
        assert "holds files that are not a CTranslate2 export" in error
    assert fingerprint(tmp_path) == before


# --- zhen-train-tokenizer, zhen-plot-attention, zhen-finetune -------------------------------------------------------


def test_train_tokenizer_output_dir_rules(checkpoint_copy, tmp_path, capsys):
    data = str(sample_corpus_path("train"))
    common = [data, "--vocab-size", "400", "--no-progress"]
    before = fingerprint(checkpoint_copy)
    error = fails_with(tokenizer_command.main, [*common, "--output-dir", checkpoint_copy, "--overwrite"], capsys)
    assert "holds files that are not a tokenizer" in error and "model.safetensors" in error
    assert fingerprint(checkpoint_copy) == before

    copy = Path(shutil.copy(data, tmp_path / "train.jsonl"))
    error = fails_with(tokenizer_command.main, [copy, "--output-dir", tmp_path, "--vocab-size", "400"], capsys)
    assert "contains the input" in error

    output = tmp_path / "tokenizer"
    tokenizer_command.main([*common, "--output-dir", str(output)])
    first = fingerprint(output)
    error = fails_with(tokenizer_command.main, [*common, "--output-dir", output], capsys)
    assert "already holds a tokenizer. Pass --overwrite" in error and fingerprint(output) == first
    tokenizer_command.main([*common, "--output-dir", str(output), "--overwrite", "--vocab-size", "500"])
    assert json.loads((output / "tokenizer.json").read_text())["model"]["vocab"].__len__() == 500
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model", "tokenizer", "train.jsonl"]


def test_plot_attention_output_is_atomic_and_never_a_checkpoint_file(checkpoint_copy, tmp_path, capsys, monkeypatch):
    before = fingerprint(checkpoint_copy)
    model = ["--model", checkpoint_copy, "--tgt", "zh", "--device", "cpu", "Hello."]
    error = fails_with(plot_command.main, [*model, "-o", checkpoint_copy / "model.safetensors"], capsys)
    assert "file of the input folder" in error and fingerprint(checkpoint_copy) == before

    image = tmp_path / "attention.png"
    image.write_bytes(b"earlier image")

    def draw_half_then_fail(model, tokenizer, text, path, **kwargs):
        Path(path).write_bytes(b"\x89PNG half")
        raise ValueError("head=9 is out of range")

    monkeypatch.setattr(plot_command, "plot_attention", draw_half_then_fail)
    error = fails_with(plot_command.main, [*model, "-o", image], capsys)
    assert "out of range" in error and image.read_bytes() == b"earlier image"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["attention.png", "model"]


def test_finetune_output_dir_rules(checkpoint_copy, tiny_test_file, tmp_path, capsys, monkeypatch):
    common = ["--model", checkpoint_copy, "--train", tiny_test_file, "--max-steps", "1"]
    before = fingerprint(tmp_path)
    for output in (checkpoint_copy, checkpoint_copy / "finetuned", tmp_path):
        error = fails_with(finetune_command.main, [*common, "--output-dir", output, "--overwrite"], capsys)
        assert "the input" in error
    data_folder = tmp_path / "data"
    data_folder.mkdir()
    (data_folder / "notes.txt").write_text("mine")
    error = fails_with(finetune_command.main, [*common, "--output-dir", data_folder, "--overwrite"], capsys)
    assert "holds files that are not a zhen checkpoint (notes.txt)" in error
    earlier = Path(shutil.copytree(checkpoint_copy, tmp_path / "earlier"))
    error = fails_with(finetune_command.main, [*common, "--output-dir", earlier], capsys)
    assert "already holds a zhen checkpoint. Pass --overwrite" in error
    assert fingerprint(tmp_path) == {
        **before,
        "data/notes.txt": fingerprint(data_folder)["notes.txt"],
        **{f"earlier/{k}": v for k, v in fingerprint(earlier).items()},
    }

    def finetune_then_fail(model, train_files, output_dir, **kwargs):
        Path(output_dir).mkdir()
        (Path(output_dir) / "config.json").write_text("{}")
        raise ValueError("training diverged")

    monkeypatch.setattr(finetune_command, "finetune", finetune_then_fail)
    error = fails_with(finetune_command.main, [*common, "--output-dir", earlier, "--overwrite"], capsys)
    assert "training diverged" in error and fingerprint(earlier) == fingerprint(checkpoint_copy)


# --- zhen-train -------------------------------------------------------------------------------------------------------


TINY = [
    "--preset", "tiny", "--model-overrides", "d_model=64", "encoder_ffn_dim=128", "decoder_ffn_dim=128",
    "--vocab-size", "600", "--max-tokens", "512", "--eval-bleu-samples", "0", "--mixed-precision", "no",
]  # fmt: skip


@pytest.mark.parametrize("resume", [False, True])
def test_train_never_replaces_an_exported_model(tmp_path, resume):
    model = tmp_path / "model"
    model.mkdir()
    (model / "model.safetensors").write_bytes(b"weights of an earlier run")
    config = resolve_config(["--output-dir", str(tmp_path), *TINY, *(["--resume"] if resume else [])])
    with pytest.raises(FileExistsError) as error:
        train(config)
    message = str(error.value)
    assert "model/" in message and "another --output-dir" in message and "nothing was overwritten" in message
    assert ("no checkpoint to resume from" in message) == resume and ("Pass --resume" in message) == (not resume)
    assert (model / "model.safetensors").read_bytes() == b"weights of an earlier run"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]


def test_check_output_file_and_folder_rules(tmp_path):
    data = tmp_path / "data.txt"
    data.write_text("x")
    with pytest.raises(UnsafeOutputError, match="is a folder"):
        safe_io.check_output_file(tmp_path, [data])
    safe_io.check_output_file(tmp_path / "new.txt", [data], [tmp_path])  # a new file beside a checkpoint's is fine
    with pytest.raises(UnsafeOutputError, match="is also the input"):
        safe_io.check_output_folder("owner/name", ["owner/name"])  # a Hub id and a local folder of the same name
