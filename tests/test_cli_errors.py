"""Issue 16, clear errors: every error a user can cause in a `zhen-*` command is one line naming the problem and the
fix, with exit status 2, a traceback only with `--debug` or `ZHEN_DEBUG=1`, and configuration errors come before any
work. Also: `--help` of every command shows the defaults."""

import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from zhen import training
from zhen.commands import evaluate, export_ct2, finetune, plot_attention, push, train, train_tokenizer, translate
from zhen.commands._cli import default_device
from zhen.commands.train import build_parser, resolve_config
from zhen.hub import save_for_hub
from zhen.translation import translate as translate_texts


BIN = Path(sys.executable).parent


def run_main(main, argv, capsys) -> tuple[int, str]:
    """Exit status and standard error of an in-process `main(argv)` that fails."""
    with pytest.raises(SystemExit) as exit_info:
        main([str(arg) for arg in argv])
    return exit_info.value.code, capsys.readouterr().err


def last_line(stderr: str) -> str:
    return stderr.strip().splitlines()[-1]


# --- --help ---------------------------------------------------------------------------------------------------------

DEVICE = default_device()  # cuda where a GPU is present
HELP = {
    "zhen-translate": (translate.parse_args, [("--batch-size", "(default: 64; greedy search in a float32 or bf16 "
                                                               "session on a CPU up to 128"),
                                              ("--device", f"(default: {DEVICE})")]),
    "zhen-evaluate": (evaluate.parse_args, [("--batch-size", "(default: 64; greedy search in a float32 or bf16 session "
                                                             "on a CPU up to 128)")]),
    "zhen-finetune": (finetune.parse_args, [("--learning-rate", "(default: 5e-05)"), ("--direction", "en-zh)")]),
    "zhen-plot-attention": (plot_attention.parse_args, [("--output", "(default: attention.png)")]),
    "zhen-push": (push.parse_args, [("--commit-message", "(default: Upload zhen model)")]),
    "zhen-export-ct2": (export_ct2.parse_args, [("--quantization", "(default: float32)")]),
    "zhen-train-tokenizer": (train_tokenizer.parse_args, [("--vocab-size", "(default: 32000)")]),
    "zhen-train": (lambda argv: build_parser().parse_args(argv), [("--learning-rate", "(default: 0.0007)"),
                                                                  ("--max-steps", "(default: none)")]),
}  # fmt: skip


@pytest.mark.parametrize("prog", list(HELP))
def test_help_shows_defaults_and_the_debug_flag(prog, capsys, monkeypatch):
    monkeypatch.setattr(sys, "argv", [prog])
    parse_args, expected = HELP[prog]
    with pytest.raises(SystemExit) as exit_info:
        parse_args(["--help"])
    assert exit_info.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert text.startswith(f"usage: {prog}") and "--debug" in text and "ZHEN_DEBUG=1" in text
    text = text[text.index("options:") :]
    for option, default in expected:
        after = text[text.index(option + " ") :]
        assert default in after[:400], (option, after[:400])


def test_zhen_train_help_gives_every_default():
    for action in build_parser()._actions:
        if action.dest not in ("help", "config", "debug"):
            assert "(default: " in action.help, action.dest


# --- one line, exit 2, traceback on demand --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hub_folder(tiny_model, tiny_tokenizer, tmp_path_factory):
    return save_for_hub(tiny_model, tiny_tokenizer, tmp_path_factory.mktemp("push") / "zhen-tiny")


def user_errors(tiny_checkpoint, tiny_test_file, hub_folder, tmp_path):
    """(main, argv, expected part of the message) for one user error per command."""
    return [
        (translate.main, ["--model", "./no-such-model", "--tgt", "zh"], "No checkpoint folder at ./no-such-model"),
        (evaluate.main, ["--model", tiny_checkpoint, "--test", "nope.jsonl", "--tgt", "zh"], "Corpus file not found"),
        (finetune.main, ["--model", "./nope", "--train", tiny_test_file, "--output-dir", tmp_path / "out"],
         "No checkpoint folder at ./nope"),
        (plot_attention.main, ["--model", "./nope", "--tgt", "zh", "Hello."], "No checkpoint folder at ./nope"),
        (export_ct2.main, [tiny_checkpoint, tiny_checkpoint], "is the input"),
        (train_tokenizer.main, ["nope.jsonl", "--output-dir", tmp_path / "tok"], "Corpus file not found: nope.jsonl"),
        (train.main, ["--preset", "nonsense"], "preset='nonsense' is not a zhen preset"),
        (push.main, [hub_folder, "me/zhen-tiny"], "401 Unauthorized"),
    ]  # fmt: skip


@pytest.fixture
def failing_push(monkeypatch):
    import httpx2
    from huggingface_hub.errors import HfHubHTTPError

    response = httpx2.Response(401, request=httpx2.Request("POST", "https://huggingface.co/api/repos/create"))

    def refuse(*args, **kwargs):
        raise HfHubHTTPError("401 Unauthorized: invalid token. Log in with `hf auth login` or pass --token.",
                             response=response)  # fmt: skip

    monkeypatch.setattr(push, "push_to_hub", refuse)


@pytest.mark.parametrize("index", range(8))
def test_user_errors_are_one_line_exit_2_with_traceback_on_demand(
    index, tiny_checkpoint, tiny_test_file, hub_folder, tmp_path, capsys, monkeypatch, failing_push
):
    pytest.importorskip("ctranslate2")
    monkeypatch.delenv("ZHEN_DEBUG", raising=False)
    main, argv, expected = user_errors(tiny_checkpoint, tiny_test_file, hub_folder, tmp_path)[index]
    status, stderr = run_main(main, argv, capsys)
    assert status == 2 and "Traceback" not in stderr, stderr
    error = last_line(stderr)
    assert (
        error.startswith(f"zhen-{main.__module__.rsplit('.', 1)[1].replace('_', '-')}: error: ") and expected in error
    )

    status, stderr = run_main(main, [*argv, "--debug"], capsys)
    assert status == 2 and "Traceback (most recent call last)" in stderr and expected in last_line(stderr)
    monkeypatch.setenv("ZHEN_DEBUG", "1")
    status, stderr = run_main(main, argv, capsys)
    assert status == 2 and "Traceback (most recent call last)" in stderr


def test_the_installed_entry_point_exits_2_with_one_line():
    executable = shutil.which("zhen-train", path=str(BIN))
    env = {key: value for key, value in os.environ.items() if key != "ZHEN_DEBUG"}
    result = subprocess.run([executable, "--learning-rate", "-1"], capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip() == (
        "zhen-train: error: learning_rate=-1.0 is out of range: it must be > 0 (default: 0.0007)."
    )


# --- configuration errors before any work ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flags", "yaml", "message"),
    [
        (["--preset", "nonsense"], "", "preset='nonsense' is not a zhen preset; choose one of ['base', 'small', "),
        (["--learning-rate", "-1"], "", "learning_rate=-1.0 is out of range: it must be > 0"),
        (["--learning-rate", "0"], "", "learning_rate=0.0 is out of range: it must be > 0"),
        ([], "learning_rate: 0\n", "learning_rate=0.0 is out of range"),
        (["--max-steps", "0"], "", "max_steps=0 would train nothing: give a positive number of optimizer steps"),
        (["--model-overrides", "d_modle=32"], "", "unknown ZhenConfig field(s) ['d_modle'] (a typo?). Valid fields: "
                                                  "['activation_dropout', 'activation_function', 'attention_dropout', "
                                                  "'d_model'"),
        (["--model-overrides", "d_model=abc"], "", "model_overrides.d_model='abc' is not an integer"),
        (["--model-overrides", "vocab_size=100"], "", "vocab_size is set by --vocab-size"),
        ([], 'vocab_size: "five hundred"\n', "vocab_size='five hundred' is not an integer"),
        ([], "mixed_precision: yes\n", "mixed_precision=True is ambiguous"),
        ([], "dataset_config: 2019\n", 'Quote it in YAML (dataset_config: "2019")'),
        ([], "max_steps: -5\n", "max_steps=-5 is out of range: it must be > 0"),
        ([], "label_smoothing: 1.5\n", "label_smoothing=1.5 is out of range: it must be in [0, 1)"),
    ],
)  # fmt: skip
def test_configuration_errors_come_before_any_work(flags, yaml, message, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(training, "prepare_data", lambda *args: pytest.fail("the error came after data preparation"))
    argv = ["--output-dir", str(tmp_path / "run"), *flags]
    if yaml:
        (tmp_path / "recipe.yaml").write_text(yaml)
        argv += ["--config", str(tmp_path / "recipe.yaml")]
    status, stderr = run_main(train.main, argv, capsys)
    assert status == 2 and "Traceback" not in stderr
    assert last_line(stderr).startswith("zhen-train: error: ") and message in last_line(stderr)
    assert not (tmp_path / "run").exists()  # nothing was created


def test_yaml_no_and_numbers_written_as_strings_are_understood(tmp_path):
    (tmp_path / "recipe.yaml").write_text("mixed_precision: no\nlearning_rate: 7e-4\nmax_steps: 1e3\ncpu: true\n")
    config = resolve_config(["--config", str(tmp_path / "recipe.yaml")])
    assert (config.mixed_precision, config.learning_rate, config.max_steps, config.cpu) == ("no", 7e-4, 1000, True)


def test_an_empty_training_file_is_named(tmp_path, capsys):
    empty = tmp_path / "train.jsonl"
    empty.write_text("\n\n")
    status, stderr = run_main(train.main, ["--train-files", empty, "--output-dir", tmp_path / "run", "--preset", "tiny",
                                           "--mixed-precision", "no"], capsys)  # fmt: skip
    assert status == 2 and "Traceback" not in stderr
    assert last_line(stderr) == f"zhen-train: error: {empty} holds no sentence pairs: it has no lines with text. " + (
        "Check the file, or leave it out."
    )


def test_a_missing_training_file_is_named_before_any_work(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(training, "make_accelerator", lambda config: pytest.fail("the error came after setup"))
    status, stderr = run_main(train.main, ["--train-files", tmp_path / "nope.jsonl", "--output-dir", tmp_path / "run"],
                              capsys)  # fmt: skip
    assert status == 2 and f"Training file not found: {tmp_path / 'nope.jsonl'}" in last_line(stderr)


# --- input text -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"Hello.\n\x00\x01\x02binary\n", "line 2: holds a NUL byte at column 1; this looks like a binary file"),
        ("你好。\n".encode("gbk"), "line 1: not valid UTF-8 (byte 0xc4 at column 1). Convert the file to UTF-8"),
        (b"ok\nok\nbad \xed\xa0\x80 surrogate\n", "line 3: not valid UTF-8"),
    ],
)
def test_translate_names_the_line_that_is_not_text_before_loading_the_model(content, message, tmp_path, capsys):
    source = tmp_path / "in.txt"
    source.write_bytes(content)
    status, stderr = run_main(translate.main, ["--model", "./not-loaded", "--tgt", "zh", "-i", source], capsys)
    assert status == 2 and last_line(stderr).startswith(f"zhen-translate: error: {source}, {message}")
    assert "not-loaded" not in stderr  # the input was checked before the model was looked for


def test_translate_names_the_line_of_standard_input(tiny_checkpoint, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"I like tea.\n\xff\xfe\n")))
    status, stderr = run_main(translate.main, ["--model", tiny_checkpoint, "--tgt", "zh", "--device", "cpu"], capsys)
    assert status == 2 and "standard input, line 2: not valid UTF-8 (byte 0xff at column 1)" in last_line(stderr)


def test_lone_surrogates_are_named(tiny_model, tiny_tokenizer, capsys):
    with pytest.raises(ValueError, match=r"texts\[1\] holds a lone surrogate '\\udcff' at character 3"):
        translate_texts(["fine", "ab\udcff"], tiny_model, tiny_tokenizer, tgt_lang="zh")
    status, stderr = run_main(plot_attention.main, ["--model", "./not-loaded", "--tgt", "zh", "ab\udcff"], capsys)
    assert status == 2 and "The sentence holds a lone surrogate" in last_line(stderr)
