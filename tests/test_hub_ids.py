"""Issue 16, Hub ids: `--model owner/name` loads from the Hub (here: a Hugging Face cache built in the test, offline);
a local folder of that name wins; only what can only be a path is reported as a missing folder."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from zhen.translation import _checked_checkpoint_path, load_model_and_tokenizer


BIN = Path(sys.executable).parent
REPO_ID = "someone/zhen-tiny"
COMMIT = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture(scope="module")
def hub_cache(tiny_checkpoint, tmp_path_factory):
    """A Hugging Face hub cache holding `tiny_checkpoint` as the model repository `someone/zhen-tiny`, laid out as
    `hf download` leaves it: `models--someone--zhen-tiny/snapshots/<commit>/...` and `refs/main`."""
    cache = tmp_path_factory.mktemp("hf_cache")
    repo = cache / f"models--{REPO_ID.replace('/', '--')}"
    shutil.copytree(tiny_checkpoint, repo / "snapshots" / COMMIT)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(COMMIT)
    return cache


def run_offline(command: str, *args, cache: Path, cwd: Path, stdin: str | None = None):
    env = {key: value for key, value in os.environ.items() if not key.startswith("HF_")}
    env.update(HF_HUB_OFFLINE="1", HF_HUB_CACHE=str(cache), HF_HOME=str(cwd / "hf_home"))
    executable = shutil.which(command, path=str(BIN))
    return subprocess.run([executable, *map(str, args)], input=stdin, capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=300)  # fmt: skip


def test_zhen_translate_and_evaluate_load_a_hub_id(hub_cache, tiny_pairs, tiny_test_file, tmp_path):
    assert not (tmp_path / "someone").exists()  # no local folder of that name: the id must go to the Hub cache
    sources = "".join(en + "\n" for en, _ in tiny_pairs[:3])
    result = run_offline("zhen-translate", "--model", REPO_ID, "--tgt", "zh", "--device", "cpu",
                         cache=hub_cache, cwd=tmp_path, stdin=sources)  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.splitlines() == [zh for _, zh in tiny_pairs[:3]]

    result = run_offline("zhen-evaluate", "--model", REPO_ID, "--test", tiny_test_file, "--tgt", "zh", "--limit", "4",
                         "--device", "cpu", "--no-progress", cache=hub_cache, cwd=tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["model"] == REPO_ID and report["results"]["en-zh"]["bleu"] > 60


def test_a_hub_id_that_cannot_be_loaded_says_both_what_was_tried(hub_cache, tmp_path):
    result = run_offline("zhen-translate", "--model", "someone/missing", "--tgt", "zh", "--device", "cpu",
                         cache=hub_cache, cwd=tmp_path, stdin="Hello.\n")  # fmt: skip
    assert result.returncode == 2 and "Traceback" not in result.stderr
    error = result.stderr.strip().splitlines()[-1]
    assert error.startswith(
        "zhen-translate: error: There is no checkpoint folder someone/missing here, and the Hub model "
        "'someone/missing' could not be loaded ("
    )
    assert "HF_HUB_OFFLINE=1" in error


def test_a_local_folder_wins_over_a_hub_id(tiny_checkpoint, tmp_path, monkeypatch):
    shutil.copytree(tiny_checkpoint, tmp_path / "someone" / "zhen-tiny")
    monkeypatch.chdir(tmp_path)
    model, tokenizer = load_model_and_tokenizer(REPO_ID)
    assert Path(model.name_or_path) == Path(REPO_ID) and tokenizer.get_lang_id("zh") == 5


@pytest.mark.parametrize("name", ["owner/name", "zhen-small", "Helsinki-NLP/opus-mt-en-zh"])
def test_hub_ids_are_passed_on(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert _checked_checkpoint_path(name) == name


@pytest.mark.parametrize("name", ["./model", "../model", "/no/such/model", "~/model", "runs/small/model"])
def test_what_can_only_be_a_path_is_a_missing_folder(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError, match=f"No checkpoint folder at {name}: check the path"):
        _checked_checkpoint_path(name)


def test_a_file_and_an_invalid_id_are_missing_folders(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "model.safetensors").write_text("")
    with pytest.raises(FileNotFoundError, match="it must be a folder, not a file"):
        _checked_checkpoint_path("model.safetensors")
    with pytest.raises(FileNotFoundError, match="'my model!' is not a Hub model id"):
        _checked_checkpoint_path("my model!")
