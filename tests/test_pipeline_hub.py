"""Tests of the `translation` pipeline and of Hub export: a complete folder loads and translates where zhen is not
importable, through the Auto classes and `pipeline("translation")`; `zhen-push` logic with a fake HfApi."""

import json
import os
import shutil
import subprocess
import sys

import pytest
from transformers import pipeline

from zhen import hub
from zhen.pipeline_zhen import ZhenTranslationPipeline
from zhen.translation import translate


@pytest.fixture(scope="module")
def hub_folder(tiny_model, tiny_tokenizer, tmp_path_factory):
    folder = tmp_path_factory.mktemp("hub") / "zhen-tiny"
    metrics = {"en-zh": {"bleu": 97.5, "chrf": 98.1, "bleu_signature": "nrefs:1|tok:zh", "sentences": 16}}
    hub.save_for_hub(tiny_model, tiny_tokenizer, folder, metrics=metrics)
    return folder


def test_pipeline_object_translates_strings_and_lists(tiny_model, tiny_tokenizer, tiny_pairs):
    translator = ZhenTranslationPipeline(model=tiny_model, tokenizer=tiny_tokenizer, device=-1, tgt_lang="zh")
    (en, zh), (en2, zh2) = tiny_pairs[:2]
    assert translator(en) == [{"translation_text": zh}]
    assert translator([en, en2], batch_size=2) == [{"translation_text": zh}, {"translation_text": zh2}]
    assert translator(zh, src_lang="zh", tgt_lang="en", num_beams=2) == [{"translation_text": en}]


def test_pipeline_needs_a_target_language(tiny_model, tiny_tokenizer):
    translator = ZhenTranslationPipeline(model=tiny_model, tokenizer=tiny_tokenizer, device=-1)
    with pytest.raises(ValueError, match="needs the target language"):
        translator("Hello.")
    with pytest.raises(ValueError, match="tgt_lang"):
        translator("Hello.", tgt_lang="zh", forced_bos_token_id=5)


def test_pipeline_translation_task_from_a_folder(hub_folder, tiny_pairs):
    en, zh = tiny_pairs[4]
    translator = pipeline("translation", model=str(hub_folder), trust_remote_code=True, src_lang="en", tgt_lang="zh")
    assert type(translator).__name__ == "ZhenTranslationPipeline"
    assert translator(en) == [{"translation_text": zh}]
    with pytest.raises(ValueError, match="trust_remote_code=True"):
        pipeline("translation", model=str(hub_folder), tgt_lang="zh")
    # With zhen imported, naming the class needs no remote code.
    direct = pipeline("translation", model=str(hub_folder), pipeline_class=ZhenTranslationPipeline, tgt_lang="zh")
    assert direct(en) == [{"translation_text": zh}]


def test_saved_folder_is_a_complete_hub_repository(hub_folder):
    assert hub.missing_hub_files(hub_folder) == []
    config = json.loads((hub_folder / "config.json").read_text())
    assert set(config["auto_map"]) == {"AutoConfig", "AutoModel", "AutoModelForSeq2SeqLM"}
    assert config["custom_pipelines"]["translation"] == {
        "impl": "pipeline_zhen.ZhenTranslationPipeline",
        "pt": ["AutoModelForSeq2SeqLM"],
        "type": "text",
    }
    tokenizer_config = json.loads((hub_folder / "tokenizer_config.json").read_text())
    assert tokenizer_config["auto_map"]["AutoTokenizer"][1] == "tokenization_zhen.ZhenTokenizerFast"
    card = (hub_folder / "README.md").read_text()
    assert "pipeline_tag: translation" in card and "| en-zh |  | 16 | 97.50 | 98.10 |" in card
    assert 'model="your-name/zhen-model"' in card  # a local folder name is no Hub id
    pipeline_code = (hub_folder / "pipeline_zhen.py").read_text()
    assert "import zhen" not in pipeline_code and "from ." not in pipeline_code


def test_make_hub_ready_completes_a_save_pretrained_folder(tiny_checkpoint, tmp_path):
    folder = tmp_path / "plain"
    shutil.copytree(tiny_checkpoint, folder)
    for name in ("modeling_zhen.py", "README.md"):
        (folder / name).unlink(missing_ok=True)
    assert "README.md is missing" in hub.missing_hub_files(folder)
    assert "config.json has no custom_pipelines entry for 'translation'" in hub.missing_hub_files(folder)
    hub.make_hub_ready(folder, repo_id="me/zhen-tiny")
    assert hub.missing_hub_files(folder) == []
    assert 'model="me/zhen-tiny"' in (folder / "README.md").read_text()


def test_make_hub_ready_refuses_a_folder_without_a_checkpoint(tmp_path):
    with pytest.raises(ValueError, match="not a saved zhen checkpoint: config.json is missing"):
        hub.make_hub_ready(tmp_path)


REMOTE_SCRIPT = """
import json, sys
sys.modules["zhen"] = None  # zhen is installed in this venv; make sure nothing can import it
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer, pipeline
folder, texts = sys.argv[1], json.loads(sys.stdin.read())
tokenizer = AutoTokenizer.from_pretrained(folder, trust_remote_code=True)
model = AutoModelForSeq2SeqLM.from_pretrained(folder, trust_remote_code=True)
tokenizer.src_lang = "en"
inputs = tokenizer(texts, return_tensors="pt", padding=True)
ids = model.generate(**inputs, forced_bos_token_id=tokenizer.get_lang_id("zh"), max_new_tokens=20)
translator = pipeline("translation", model=folder, trust_remote_code=True, src_lang="en", tgt_lang="zh")
print(json.dumps({
    "modules": [type(model).__module__, type(tokenizer).__module__, type(translator).__module__],
    "ids": ids.tolist(),
    "pipeline": translator(texts),
}))
"""


def test_folder_loads_and_translates_without_zhen(hub_folder, tiny_model, tiny_tokenizer, tiny_pairs, tmp_path):
    texts = [en for en, _ in tiny_pairs[:3]]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_MODULES_CACHE": str(tmp_path / "modules")}
    env.pop("PYTHONPATH", None)
    result = subprocess.run(
        [sys.executable, "-c", REMOTE_SCRIPT, str(hub_folder)],
        input=json.dumps(texts),
        cwd=tmp_path,  # outside the repository, so that the checkout is not on sys.path either
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    remote = json.loads(result.stdout.strip().splitlines()[-1])
    assert all(module.startswith("transformers_modules") for module in remote["modules"])
    tiny_tokenizer.src_lang = "en"
    inputs = tiny_tokenizer(texts, return_tensors="pt", padding=True)
    expected = tiny_model.generate(**inputs, forced_bos_token_id=5, max_new_tokens=20)
    assert remote["ids"] == expected.tolist()
    local = translate(texts, tiny_model, tiny_tokenizer, tgt_lang="zh")
    assert remote["pipeline"] == [{"translation_text": text} for text in local]


class FakeHfApi:
    calls = []

    def __init__(self, token=None):
        self.calls.append(("init", token))

    def create_repo(self, repo_id, **kwargs):
        self.calls.append(("create_repo", repo_id, kwargs))

    def upload_folder(self, **kwargs):
        self.calls.append(("upload_folder", kwargs))
        return type("Commit", (), {"commit_url": "https://hub.example/commit/1"})()


def test_push_uploads_a_complete_folder(hub_folder, monkeypatch):
    FakeHfApi.calls = []
    monkeypatch.setattr(hub, "HfApi", FakeHfApi)
    url = hub.push_to_hub(hub_folder, "me/zhen-tiny", private=True, token="hf_x", commit_message="v1")
    assert url == "https://hub.example/commit/1"
    assert FakeHfApi.calls[0] == ("init", "hf_x")
    assert FakeHfApi.calls[1] == (
        "create_repo",
        "me/zhen-tiny",
        {"private": True, "exist_ok": True, "repo_type": "model"},
    )
    upload = FakeHfApi.calls[2][1]
    assert (upload["folder_path"], upload["repo_id"], upload["commit_message"]) == (
        str(hub_folder),
        "me/zhen-tiny",
        "v1",
    )


def test_push_refuses_an_incomplete_folder(tiny_checkpoint, monkeypatch):
    FakeHfApi.calls = []
    monkeypatch.setattr(hub, "HfApi", FakeHfApi)
    with pytest.raises(ValueError, match="not a complete zhen Hub repository: .*pipeline_zhen.py is missing"):
        hub.push_to_hub(tiny_checkpoint, "me/zhen-tiny")
    assert FakeHfApi.calls == []
