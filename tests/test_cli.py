"""Command-line tools: each entry point once as a subprocess (they take seconds to import), the rest in-process."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from zhen.commands import evaluate as evaluate_command
from zhen.commands import push as push_command
from zhen.commands import translate as translate_command
from zhen.translation import translate


BIN = Path(sys.executable).parent
REPO = Path(__file__).resolve().parents[1]


def run(command, *args, stdin=None, cwd=None):
    executable = shutil.which(command, path=str(BIN)) or shutil.which(command)
    assert executable, f"{command} is not installed: pip install -e ."
    return subprocess.run(
        [executable, *map(str, args)], input=stdin, capture_output=True, text=True, timeout=300, cwd=cwd, env=os.environ
    )


# --- subprocesses ---------------------------------------------------------------------------------------------------


def test_zhen_translate_streams_stdin_line_by_line(tiny_checkpoint, tiny_pairs):
    (en0, zh0), (en1, zh1) = tiny_pairs[:2]
    long_line = " ".join(en for en, _ in tiny_pairs)
    stdin = f"{en0}\n\n{long_line}\n{en1}\n"
    result = run("zhen-translate", "--model", tiny_checkpoint, "--tgt", "zh", "--batch-size", "2",
                 "--max-source-tokens", "12", "--device", "cpu", stdin=stdin)  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.split("\n")
    assert lines[:2] == [zh0, ""] and lines[3:] == [zh1, ""] and lines[2]
    assert "line 3:" in result.stderr and "more than the 12" in result.stderr


def test_zhen_evaluate_both_directions(tiny_checkpoint, tiny_test_file, tmp_path):
    result = run("zhen-evaluate", "--model", tiny_checkpoint, "--test", tiny_test_file, "--both", "--hyp-out",
                 "hyp.txt", "--limit", "8", "--beams", "2", "--device", "cpu", cwd=tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.strip().splitlines()
    assert lines[0].split() == ["direction", "sentences", "BLEU", "chrF"]
    assert lines[1].startswith("en-zh") and lines[2].startswith("zh-en")
    report = json.loads(lines[-1])["results"]
    assert "tok:zh" in report["en-zh"]["bleu_signature"] and "tok:13a" in report["zh-en"]["bleu_signature"]
    assert report["en-zh"]["sentences"] == 8 and report["en-zh"]["bleu"] > 60
    assert len((tmp_path / "hyp.en-zh.txt").read_text(encoding="utf-8").splitlines()) == 8
    assert (tmp_path / "hyp.zh-en.txt").is_file()


def test_zhen_plot_attention_writes_a_png(tiny_checkpoint, tiny_pairs, tmp_path):
    output = tmp_path / "attention.png"
    result = run("zhen-plot-attention", "--model", tiny_checkpoint, "--src", "zh", "--tgt", "en", tiny_pairs[0][1],
                 "-o", output, "--layer", "1", "--head", "0", "--device", "cpu")  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    assert output.read_bytes()[:4] == b"\x89PNG" and tiny_pairs[0][0] in result.stdout


def test_zhen_finetune_runs_and_saves_a_hub_folder(tiny_checkpoint, tiny_test_file, tmp_path):
    output = tmp_path / "finetuned"
    result = run("zhen-finetune", "--model", tiny_checkpoint, "--train", tiny_test_file, "--output-dir", output,
                 "--max-steps", "2", "--batch-size", "4", "--max-length", "32", "--use-cpu")  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    assert (output / "model.safetensors").is_file() and (output / "pipeline_zhen.py").is_file()


def test_zhen_push_help():
    result = run("zhen-push", "--help")
    assert result.returncode == 0 and "--private" in result.stdout and "--commit-message" in result.stdout


def test_scripts_are_thin_wrappers():
    for name in ("translate", "evaluate", "finetune", "plot_attention", "push", "export_ct2"):
        source = (REPO / "scripts" / f"{name}.py").read_text()
        assert f"from zhen.commands.{name} import main" in source and "main()" in source


# --- in-process -----------------------------------------------------------------------------------------------------


def test_translate_files_in_process(tiny_checkpoint, tiny_pairs, tmp_path):
    source, target = tmp_path / "in.zh.txt", tmp_path / "out.en.txt"
    source.write_text("\n".join(zh for _, zh in tiny_pairs[:5]) + "\n\n", encoding="utf-8")
    translate_command.main(["--model", str(tiny_checkpoint), "--tgt", "en", "-i", str(source), "-o", str(target),
                            "--device", "cpu", "--no-progress", "--batch-size", "2", "--streams", "2"])  # fmt: skip
    expected = translate([zh for _, zh in tiny_pairs[:5]], str(tiny_checkpoint), tgt_lang="en", streams=1)
    assert target.read_text(encoding="utf-8").split("\n") == expected + ["", ""]


def test_translate_output_stays_one_line_per_input(tiny_checkpoint, tmp_path, monkeypatch):
    monkeypatch.setattr(translate_command, "translate", lambda chunk, *args, **kwargs: ["a\nb"] * len(chunk))
    source, target = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("x\ny\n")
    translate_command.main(["--model", str(tiny_checkpoint), "--tgt", "zh", "-i", str(source), "-o", str(target),
                            "--device", "cpu", "--no-progress"])  # fmt: skip
    assert target.read_text() == "a b\na b\n"


@pytest.mark.parametrize("streams", [1, 4])
def test_translate_reads_files_in_chunks_of_batches_for_every_stream(tiny_checkpoint, tmp_path, monkeypatch, streams):
    """A file is read a chunk at a time, `hardware.read_ahead_batches(streams)` batches each: at least 8, and 4 per
    stream where more streams decode."""
    chunks = []
    monkeypatch.setattr(translate_command, "translate", lambda chunk, *a, **kw: chunks.append(len(chunk)) or chunk)
    source, target = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("".join(f"line {i}\n" for i in range(70)))
    translate_command.main(["--model", str(tiny_checkpoint), "--tgt", "zh", "-i", str(source), "-o", str(target),
                            "--device", "cpu", "--no-progress", "--batch-size", "2",
                            "--streams", str(streams)])  # fmt: skip
    per_chunk = 2 * max(8, 4 * streams)
    assert chunks == [per_chunk] * (70 // per_chunk) + [70 % per_chunk] and target.read_text() == source.read_text()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--model", "M"], "the following arguments are required: --tgt"),
        (["--model", "M", "--tgt", "fr"], "Unknown language code 'fr'"),
        (["--model", "M", "--tgt", "zh", "--src", "zh-CN"], "both 'zh'"),
        (["--model", "M", "--tgt", "zh", "-i", "missing.txt"], "input file not found: missing.txt"),
        (["--model", "M", "--tgt", "zh", "--batch-size", "0"], "--batch-size: 0 is not a positive integer"),
        (["--model", "M", "--tgt", "zh", "--streams", "0"], "--streams: 0 is not a positive integer"),
    ],
)
def test_translate_argument_errors(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        translate_command.parse_args(argv)
    assert exit_info.value.code == 2 and message in capsys.readouterr().err


def test_translate_names_a_folder_that_is_not_a_checkpoint(tmp_path, capsys):
    with pytest.raises(SystemExit):
        translate_command.main(["--model", str(tmp_path), "--tgt", "zh", "--device", "cpu"])
    assert "is not a zhen checkpoint: it has no config.json" in capsys.readouterr().err


def test_evaluate_argument_errors_and_hypothesis_paths(capsys):
    with pytest.raises(SystemExit):
        evaluate_command.parse_args(["--model", "M", "--test", "t.jsonl"])
    assert "--tgt en|zh, or --both" in capsys.readouterr().err
    assert evaluate_command.parse_args(["--model", "M", "--test", "t", "--tgt", "en"]).directions == [("zh", "en")]
    assert evaluate_command.hypothesis_path("out/hyp.txt", "en", "zh", both=True) == Path("out/hyp.en-zh.txt")
    assert evaluate_command.hypothesis_path("hyp.txt", "en", "zh", both=False) == Path("hyp.txt")
    assert evaluate_command.hypothesis_path(None, "zh", "en", both=False) == Path("hypotheses.zh-en.txt")


def test_evaluate_names_a_missing_test_file(tiny_checkpoint, capsys):
    with pytest.raises(SystemExit):
        evaluate_command.main(["--model", str(tiny_checkpoint), "--test", "nope.jsonl", "--tgt", "zh"])
    assert "Corpus file not found: nope.jsonl" in capsys.readouterr().err


def test_push_refuses_an_incomplete_folder(tiny_checkpoint, capsys):
    with pytest.raises(SystemExit):
        push_command.main([str(tiny_checkpoint), "me/zhen-tiny"])
    error = capsys.readouterr().err
    assert "not a complete zhen Hub repository" in error and "README.md is missing" in error
    assert "make_hub_ready" in error
