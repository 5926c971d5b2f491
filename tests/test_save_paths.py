"""Every way a user saves or pushes a zhen model gives a complete Hub repository: the folder of `save_pretrained`
(model and tokenizer), of `Seq2SeqTrainer.save_model`, and what `model.push_to_hub` + `tokenizer.push_to_hub` and
`Trainer.push_to_hub` upload (captured from a fake Hub API). Each is loaded in a fresh process where zhen cannot be
imported, with `HF_HUB_OFFLINE=1`, and must translate through the Auto classes and `pipeline("translation")`."""

import shutil
from pathlib import Path

import pytest
import torch
from transformers import Seq2SeqTrainer, Seq2SeqTrainingArguments
from transformers import trainer as trainer_module
from transformers.utils import hub as transformers_hub

from zhen.translation import translate


FRESH_PROCESS = """
import json, sys
sys.modules["zhen"] = None  # zhen is installed in this venv; make sure nothing can import it
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer, pipeline
folder, texts = sys.argv[1], json.loads(sys.stdin.read())
tokenizer = AutoTokenizer.from_pretrained(folder, trust_remote_code=True)
model = AutoModelForSeq2SeqLM.from_pretrained(folder, trust_remote_code=True)
translator = pipeline("translation", model=folder, trust_remote_code=True, src_lang="en", tgt_lang="zh")
print(json.dumps({"modules": [type(model).__module__, type(translator).__module__], "pipeline": translator(texts)}))
"""


@pytest.fixture
def expected(tiny_model, tiny_tokenizer, tiny_pairs):
    texts = [en for en, _ in tiny_pairs[:3]]
    return texts, [{"translation_text": text} for text in translate(texts, tiny_model, tiny_tokenizer, tgt_lang="zh")]


def test_save_pretrained(tiny_model, tiny_tokenizer, expected, tmp_path, run_without_zhen):
    folder = tmp_path / "saved"
    tiny_model.save_pretrained(folder)
    tiny_tokenizer.save_pretrained(folder)
    texts, translations = expected
    assert run_without_zhen(FRESH_PROCESS, folder, texts)["pipeline"] == translations


def test_trainer_save_model(tiny_model, tiny_tokenizer, expected, tmp_path, run_without_zhen):
    args = Seq2SeqTrainingArguments(output_dir=str(tmp_path / "run"), report_to="none", use_cpu=True)
    trainer = Seq2SeqTrainer(model=tiny_model, args=args, processing_class=tiny_tokenizer)
    trainer.save_model(str(tmp_path / "trainer-saved"))
    texts, translations = expected
    assert run_without_zhen(FRESH_PROCESS, tmp_path / "trainer-saved", texts)["pipeline"] == translations


class FakeHub:
    """Stands in for `huggingface_hub.HfApi` where Transformers pushes: keeps what is uploaded in `folder`."""

    def __init__(self, folder: Path):
        self.folder = folder

    def __call__(self):  # `transformers.utils.hub.hf_api()` returns the API object
        return self

    def create_repo(self, repo_id, **kwargs):
        return type("Repo", (), {"repo_id": repo_id, "url": f"https://hub.example/{repo_id}"})()

    def create_commit(self, repo_id, operations, **kwargs):
        for operation in operations:
            target = self.folder / operation.path_in_repo
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(operation.path_or_fileobj, target)
        return type("Commit", (), {"commit_url": "https://hub.example/commit", "oid": "0" * 40})()

    def upload_folder(self, folder_path, **kwargs):
        shutil.copytree(folder_path, self.folder, dirs_exist_ok=True, ignore=shutil.ignore_patterns("checkpoint-*"))
        return self.create_commit(kwargs.get("repo_id"), [])


@pytest.fixture
def fake_hub(monkeypatch, tmp_path):
    hub = FakeHub(tmp_path / "uploaded")
    monkeypatch.setattr(transformers_hub, "hf_api", hub)
    monkeypatch.setattr(trainer_module, "hf_api", hub)
    monkeypatch.setattr(transformers_hub, "create_and_tag_model_card", lambda *args, **kwargs: _empty_card())
    return hub


def _empty_card():
    from huggingface_hub import ModelCard

    return ModelCard("---\nlibrary_name: transformers\n---\n")


def test_model_and_tokenizer_push_to_hub(tiny_model, tiny_tokenizer, expected, fake_hub, run_without_zhen):
    tiny_model.push_to_hub("me/zhen-tiny")
    tiny_tokenizer.push_to_hub("me/zhen-tiny")
    assert {"pipeline_zhen.py", "fast_generation.py", "modeling_zhen.py"} <= {p.name for p in fake_hub.folder.iterdir()}
    texts, translations = expected
    assert run_without_zhen(FRESH_PROCESS, fake_hub.folder, texts)["pipeline"] == translations


def test_trainer_push_to_hub(tiny_model, tiny_tokenizer, expected, fake_hub, tmp_path, run_without_zhen):
    args = Seq2SeqTrainingArguments(
        output_dir=str(tmp_path / "run"), report_to="none", use_cpu=True, push_to_hub=True, hub_model_id="me/zhen-tiny"
    )
    trainer = Seq2SeqTrainer(model=tiny_model, args=args, processing_class=tiny_tokenizer)
    trainer.push_to_hub()
    texts, translations = expected
    assert run_without_zhen(FRESH_PROCESS, fake_hub.folder, texts)["pipeline"] == translations


def test_saved_weights_are_not_changed_by_saving(tiny_model, tmp_path):
    before = {name: tensor.clone() for name, tensor in tiny_model.state_dict().items()}
    tiny_model.save_pretrained(tmp_path)
    assert all(torch.equal(before[name], tensor) for name, tensor in tiny_model.state_dict().items())
