# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""Making a zhen checkpoint folder a complete Hub repository, and uploading it.

A complete folder loads like any Hub model where zhen is not installed:

- `config.json` with `auto_map` (AutoConfig, AutoModel, AutoModelForSeq2SeqLM) and `custom_pipelines` (the
  `translation` pipeline), `generation_config.json` and `model.safetensors`;
- `tokenizer.json` and `tokenizer_config.json` with `auto_map` (AutoTokenizer);
- the code those maps name: `configuration_zhen.py`, `modeling_zhen.py`, `tokenization_zhen.py`, `pipeline_zhen.py`;
- a model card, `README.md`.

[`save_for_hub`] writes one from a model and tokenizer, [`make_hub_ready`] completes a folder written by
`save_pretrained`, [`missing_hub_files`] tells what a folder lacks, and [`push_to_hub`] uploads it.
"""

import json
import shutil
from pathlib import Path

from huggingface_hub import HfApi
from transformers import AutoModelForSeq2SeqLM, GenerationConfig
from transformers.pipelines import PIPELINE_REGISTRY

from . import configuration_zhen, modeling_zhen, pipeline_zhen, tokenization_zhen
from .pipeline_zhen import ZhenTranslationPipeline


CODE_MODULES = (configuration_zhen, modeling_zhen, tokenization_zhen, pipeline_zhen)
REQUIRED_FILES = (
    "config.json",
    "generation_config.json",
    "model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
    "README.md",
    *(Path(module.__file__).name for module in CODE_MODULES),
)
MODEL_AUTO_CLASSES = ("AutoConfig", "AutoModel", "AutoModelForSeq2SeqLM")


def register_pipeline() -> None:
    """Register [`ZhenTranslationPipeline`] as the `translation` pipeline of `AutoModelForSeq2SeqLM` models."""
    registered = PIPELINE_REGISTRY.supported_tasks.get("translation", {})
    if registered.get("impl") is not ZhenTranslationPipeline:
        PIPELINE_REGISTRY.register_pipeline(
            "translation", pipeline_class=ZhenTranslationPipeline, pt_model=AutoModelForSeq2SeqLM, type="text"
        )


def custom_pipelines_entry() -> dict:
    """The `custom_pipelines` value of config.json, as `Pipeline.save_pretrained` writes it for a registered class."""
    register_pipeline()
    entry = {}
    for task, info in ZhenTranslationPipeline._registered_impl.items():
        impl = info["impl"]
        entry[task] = {
            **info,
            "impl": f"{impl.__module__.split('.')[-1]}.{impl.__name__}",
            "pt": [model_class.__name__ for model_class in info["pt"]],
        }
    return entry


def save_for_hub(
    model, tokenizer, folder, *, metrics: dict | None = None, model_card: str | None = None, repo_id: str | None = None
) -> Path:
    """
    Save `model` and `tokenizer` to `folder` as a complete Hub repository (see the module docstring).

    Args:
        model (`ZhenForConditionalGeneration`): The model; saved with `save_pretrained` (safetensors).
        tokenizer (`ZhenTokenizerFast`): Its tokenizer.
        folder (`str` or `os.PathLike`): Where to save; created if needed.
        metrics (`dict`, *optional*):
            Scores for the model card, per direction: `{"en-zh": {"bleu": ..., "chrf": ..., "bleu_signature": ...,
            "sentences": ...}, ...}` (what `zhen.evaluation.evaluate_model` returns), optionally with a `"test_set"`
            name inside each.
        model_card (`str`, *optional*): README.md text; by default one is written from the config and `metrics`.
        repo_id (`str`, *optional*): Hub id the model card's examples load; defaults to the folder's name.

    Returns:
        `Path` of the folder.
    """
    folder = Path(folder)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return make_hub_ready(folder, metrics=metrics, model_card=model_card, repo_id=repo_id)


def make_hub_ready(
    folder, *, metrics: dict | None = None, model_card: str | None = None, repo_id: str | None = None
) -> Path:
    """
    Complete a folder written by `save_pretrained` (model and tokenizer) into a Hub repository: add the
    `translation` pipeline to config.json, copy the code files, and write the model card and any missing
    `generation_config.json` or `auto_map` entries. Safe to run again; an existing README.md is kept unless
    `model_card` or `metrics` is given. Arguments as for [`save_for_hub`].

    Raises:
        `ValueError` if the folder holds no zhen model and tokenizer.
    """
    folder = Path(folder)
    for name in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"):
        if not (folder / name).is_file():
            raise ValueError(
                f"{folder} is not a saved zhen checkpoint: {name} is missing. Save the model and the tokenizer there "
                "first (save_pretrained), or use zhen.hub.save_for_hub(model, tokenizer, folder)."
            )
    config = _read_json(folder / "config.json")
    if config.get("model_type") != "zhen":
        raise ValueError(f"{folder} holds a {config.get('model_type')!r} model, not a zhen one.")
    config["auto_map"] = {**config.get("auto_map", {}), **modeling_zhen.AUTO_MAP}
    config["custom_pipelines"] = custom_pipelines_entry()
    _write_json(folder / "config.json", config)

    tokenizer_config = _read_json(folder / "tokenizer_config.json")
    tokenizer_config.setdefault("auto_map", {"AutoTokenizer": [None, "tokenization_zhen.ZhenTokenizerFast"]})
    _write_json(folder / "tokenizer_config.json", tokenizer_config)

    if not (folder / "generation_config.json").is_file():
        GenerationConfig(
            **{
                key: config.get(key)
                for key in ("pad_token_id", "bos_token_id", "eos_token_id", "decoder_start_token_id")
            }
        ).save_pretrained(folder)
    for module in CODE_MODULES:
        shutil.copyfile(module.__file__, folder / Path(module.__file__).name)
    if model_card is not None or metrics is not None or not (folder / "README.md").is_file():
        (folder / "README.md").write_text(
            model_card or render_model_card(config, metrics, repo_id or folder.resolve().name), encoding="utf-8"
        )
    return folder


def missing_hub_files(folder) -> list[str]:
    """What `folder` lacks to be a complete zhen Hub repository, as readable problems; empty when complete."""
    folder = Path(folder)
    if not folder.is_dir():
        return [f"{folder} is not a folder"]
    problems = [f"{name} is missing" for name in REQUIRED_FILES if not (folder / name).is_file()]
    if (folder / "config.json").is_file():
        config = _read_json(folder / "config.json")
        problems += [
            f"config.json auto_map has no {name}"
            for name in MODEL_AUTO_CLASSES
            if name not in config.get("auto_map", {})
        ]
        if "translation" not in config.get("custom_pipelines", {}):
            problems.append("config.json has no custom_pipelines entry for 'translation'")
    if (folder / "tokenizer_config.json").is_file():
        if "AutoTokenizer" not in _read_json(folder / "tokenizer_config.json").get("auto_map", {}):
            problems.append("tokenizer_config.json auto_map has no AutoTokenizer")
    return problems


def push_to_hub(
    folder,
    repo_id: str,
    *,
    private: bool = False,
    token: str | None = None,
    commit_message: str = "Upload zhen model",
    revision: str | None = None,
) -> str:
    """
    Upload a complete zhen folder to the Hub model repository `repo_id` (created if needed).

    Args:
        folder (`str` or `os.PathLike`): A folder that [`missing_hub_files`] finds complete.
        repo_id (`str`): `"user/name"` or `"org/name"`.
        private (`bool`, *optional*, defaults to `False`): Create the repository private.
        token (`str`, *optional*): A Hub token with write access; defaults to the logged-in one (`hf auth login`).
        commit_message (`str`, *optional*): Message of the upload commit.
        revision (`str`, *optional*): Branch to push to; defaults to `main`.

    Returns:
        `str`: URL of the commit.

    Raises:
        `ValueError` if the folder is not complete, listing what is missing and how to fix it.
    """
    problems = missing_hub_files(folder)
    if problems:
        raise ValueError(
            f"{folder} is not a complete zhen Hub repository: {'; '.join(problems)}. Export it with "
            "zhen.hub.save_for_hub(model, tokenizer, folder), or complete a save_pretrained folder with "
            "zhen.hub.make_hub_ready(folder)."
        )
    api = HfApi(token=token)
    api.create_repo(repo_id, private=private, exist_ok=True, repo_type="model")
    commit = api.upload_folder(
        folder_path=str(folder), repo_id=repo_id, commit_message=commit_message, revision=revision, repo_type="model"
    )
    return getattr(commit, "commit_url", str(commit))


def render_model_card(
    config: dict, metrics: dict | None = None, repo_id: str = "path/to/zhen-model", extra_sections: str = ""
) -> str:
    """A README.md for a zhen checkpoint: Hub metadata, usage with and without zhen installed, architecture, the
    given `metrics` (see [`save_for_hub`]; a result may name its `direction` when its key is not one) and any
    `extra_sections` (markdown, e.g. how it was trained); the examples load `repo_id`."""
    repo = repo_id
    architecture = (
        f"d_model {config.get('d_model')}, {config.get('encoder_layers')} encoder + {config.get('decoder_layers')} "
        f"decoder layers, {config.get('encoder_attention_heads')} heads, feed-forward {config.get('encoder_ffn_dim')}, "
        f"{config.get('position_embedding_type')} positions, "
        f"{'pre' if config.get('normalize_before', True) else 'post'}-norm, vocabulary {config.get('vocab_size')}"
    )
    lines = [
        "---",
        "language: [en, zh]",
        "license: apache-2.0",
        "library_name: transformers",
        "pipeline_tag: translation",
        "tags: [translation, zhen, custom_code]",
        "---",
        "",
        "# zhen English⇄Chinese translation model",
        "",
        "One encoder-decoder Transformer that translates English→Chinese and Chinese→English. The target language",
        "code (`__zh__` or `__en__`) is forced as the first generated token, so the target language must be given.",
        "",
        f"Architecture: {architecture}.",
        "",
        "## Use",
        "",
        "With [zhen](https://github.com/zhen-nmt/zhen) installed (`pip install zhen-transformer`):",
        "",
        "```python",
        "import zhen",
        f'zhen.translate(["I love nature."], model="{repo}", src_lang="en", tgt_lang="zh")',
        "```",
        "",
        "With Transformers only (the repository carries its code, hence `trust_remote_code=True`):",
        "",
        "```python",
        "from transformers import AutoModelForSeq2SeqLM, AutoTokenizer, pipeline",
        "",
        f'translator = pipeline("translation", model="{repo}", trust_remote_code=True, src_lang="en", tgt_lang="zh")',
        'translator("I love nature.")  # [{"translation_text": ...}]',
        "",
        f'tokenizer = AutoTokenizer.from_pretrained("{repo}", trust_remote_code=True)',
        f'model = AutoModelForSeq2SeqLM.from_pretrained("{repo}", trust_remote_code=True)',
        'tokenizer.src_lang = "zh"',
        'inputs = tokenizer(["你好。"], return_tensors="pt")',
        'output = model.generate(**inputs, forced_bos_token_id=tokenizer.get_lang_id("en"), num_beams=4)',
        "tokenizer.batch_decode(output, skip_special_tokens=True)",
        "```",
    ]
    if metrics:
        lines += [
            "",
            "## Evaluation",
            "",
            "| direction | test set | sentences | BLEU | chrF |",
            "| --- | --- | --- | --- | --- |",
        ]
        for key, result in metrics.items():
            lines.append(
                f"| {result.get('direction', key)} | {result.get('test_set', '')} | {result.get('sentences', '')} "
                f"| {result['bleu']:.2f} | {result['chrf']:.2f} |"
            )
        signatures = {result.get("bleu_signature") for result in metrics.values()} - {None}
        lines += ["", "sacreBLEU signatures: " + ", ".join(f"`{s}`" for s in sorted(signatures))]
    if extra_sections:
        lines += ["", extra_sections.strip()]
    return "\n".join(lines) + "\n"


def _read_json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _write_json(path: Path, data: dict) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")


__all__ = [
    "custom_pipelines_entry",
    "make_hub_ready",
    "missing_hub_files",
    "push_to_hub",
    "register_pipeline",
    "render_model_card",
    "save_for_hub",
]
