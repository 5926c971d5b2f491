# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""Making a zhen checkpoint folder a complete Hub repository, and uploading it.

A complete folder loads like any Hub model where zhen is not installed:

- `config.json` with `auto_map` (AutoConfig, AutoModel, AutoModelForSeq2SeqLM) and `custom_pipelines` (the
  `translation` pipeline), `generation_config.json` and `model.safetensors`;
- `tokenizer.json` and `tokenizer_config.json` with `auto_map` (AutoTokenizer);
- the code those maps name: `configuration_zhen.py`, `modeling_zhen.py`, `tokenization_zhen.py`, `pipeline_zhen.py`
  and what the pipeline translates with, `fast_generation.py`, `session_modules.py`, `decoder_steps.py`,
  `decoding_cache.py`, `search.py`, `layer_steps.py`, `packing.py`, `screened_argmax.py`, `draft_decoding.py`,
  `pooled_tails.py`, `weight_stamps.py`, `quantization.py`, `hardware.py` and `text_checks.py`
  (`zhen.modeling_zhen.CODE_FILES`);
- a model card, `README.md`.

[`save_for_hub`] writes one from a model and tokenizer, [`make_hub_ready`] completes a folder written by
`save_pretrained`, [`missing_hub_files`] tells what a folder lacks, and [`push_to_hub`] uploads it.
"""

import copy
import json
import re
import shutil
from pathlib import Path

import torch
from huggingface_hub import EvalResult, HfApi, ModelCard, ModelCardData
from transformers import AutoModelForSeq2SeqLM, GenerationConfig
from transformers.pipelines import PIPELINE_REGISTRY

from . import configuration_zhen, modeling_zhen, pipeline_zhen
from .checkpointing import replace_directory, write_json_atomic
from .pipeline_zhen import DEFAULT_MAX_LENGTH_OFFSET, DEFAULT_MAX_LENGTH_RATIO, ZhenTranslationPipeline


REQUIRED_FILES = (
    "config.json",
    "generation_config.json",
    "model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
    "README.md",
    *modeling_zhen.CODE_FILES,
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
    model,
    tokenizer,
    folder,
    *,
    metrics: dict | None = None,
    model_card: str | None = None,
    repo_id: str | None = None,
    extra_sections: str = "",
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
            name inside each (see [`render_model_card`]).
        model_card (`str`, *optional*): README.md text; by default one is written from the config and `metrics`.
        repo_id (`str`, *optional*):
            Hub id (`"owner/name"`) that the model card's examples load; a `your-name/zhen-model` placeholder if not
            given.
        extra_sections (`str`, *optional*): Markdown for the model card, e.g. the training data and its licence.

    Returns:
        `Path` of the folder.
    """
    folder = Path(folder)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return make_hub_ready(
        folder, metrics=metrics, model_card=model_card, repo_id=repo_id, extra_sections=extra_sections
    )


def make_hub_ready(
    folder,
    *,
    metrics: dict | None = None,
    model_card: str | None = None,
    repo_id: str | None = None,
    extra_sections: str = "",
) -> Path:
    """
    Complete a folder written by `save_pretrained` (model and tokenizer) into a Hub repository: add the
    `translation` pipeline to config.json, copy the code files, write the model card and any missing `auto_map`
    entries, and give `generation_config.json` zhen's length settings (see [`translation_generation_config`]). Safe
    to run again; an existing README.md is kept unless `model_card`, `metrics` or `extra_sections` is given.
    Arguments as for [`save_for_hub`].

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

    saved = None
    if (folder / "generation_config.json").is_file():
        saved = GenerationConfig.from_pretrained(folder)
    translation_generation_config(config, saved).save_pretrained(folder)
    for name in modeling_zhen.CODE_FILES:
        shutil.copyfile(Path(modeling_zhen.__file__).with_name(name), folder / name)
    if model_card is not None or metrics is not None or extra_sections or not (folder / "README.md").is_file():
        card = model_card or render_model_card(config, metrics, repo_id, extra_sections)
        (folder / "README.md").write_text(card, encoding="utf-8")
    return folder


def translation_generation_config(model_config: dict, generation_config: GenerationConfig | None = None):
    """
    `generation_config` (by default one with `model_config`'s special tokens) with the length settings a zhen export
    carries:

    - no `max_new_tokens`: a pinned one overrides the `max_length` that users pass (the translation pipeline's,
      `Seq2SeqTrainer`'s `generation_max_length`), with a warning at every call; earlier zhen exports had one;
    - `max_length` (if unset or longer) = `max_position_embeddings`, so that a bare `model.generate()` gives whole
      translations and stops within the position table (Marian checkpoints carry 512);
    - `max_length_ratio` and `max_length_offset`, the source-relative budget that `zhen.translate` and the pipeline
      use when the user gives no length.

    Returns:
        A new `GenerationConfig`.
    """
    if generation_config is None:
        tokens = ("pad_token_id", "bos_token_id", "eos_token_id", "decoder_start_token_id")
        generation_config = GenerationConfig(**{key: model_config.get(key) for key in tokens})
    generation_config = copy.deepcopy(generation_config)
    generation_config._from_model_config = False  # it now holds settings of its own, not just the config's tokens
    generation_config.max_new_tokens = None
    table = model_config.get("max_position_embeddings")
    if table and (generation_config.max_length is None or generation_config.max_length > table):
        generation_config.max_length = table
    for name, default in (
        ("max_length_ratio", DEFAULT_MAX_LENGTH_RATIO),
        ("max_length_offset", DEFAULT_MAX_LENGTH_OFFSET),
    ):
        if getattr(generation_config, name, None) is None:
            setattr(generation_config, name, default)
    return generation_config


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
    config: dict,
    metrics: dict | None = None,
    repo_id: str | None = None,
    extra_sections: str = "",
    *,
    num_parameters: int | None = None,
) -> str:
    """
    A README.md for a zhen checkpoint, written with `huggingface_hub.ModelCard`: Hub metadata (languages, licence,
    library, pipeline tag, tags and a `model-index` with the `metrics`, which the Hub shows as evaluation results),
    what the model is for and what it cannot do, usage, the evaluation table with each row's sacreBLEU signature,
    and `extra_sections` (markdown, e.g. the training data with its licence and how it was trained; a placeholder
    asking for them is added when they say nothing about the data).

    Args:
        config (`dict`): The model's config (`config.json`).
        metrics (`dict`, *optional*):
            Scores per result: `{"en-zh": {"bleu": ..., "chrf": ..., "bleu_signature": ..., "sentences": ...}}`,
            optionally with `"direction"` (when the key is not one), `"test_set"` (its name), `"dataset"` (a dataset
            id for the Hub) and `"split"`.
        repo_id (`str`, *optional*):
            The Hub id (`"owner/name"`) that the usage examples load; anything else (a local folder name) gives the
            placeholder `your-name/zhen-model`.
        extra_sections (`str`, *optional*): Markdown appended after the evaluation.
        num_parameters (`int`, *optional*): Counted from `config` when not given.

    Returns:
        `str`: the model card.
    """
    repo = repo_id if repo_id and HUB_ID.match(repo_id) else PLACEHOLDER_REPO_ID
    metrics = metrics or {}
    num_parameters = num_parameters or count_parameters(config)
    data = ModelCardData(
        language=["en", "zh"],
        license="apache-2.0",
        library_name="transformers",
        pipeline_tag="translation",
        tags=["translation", "zhen", "custom_code", "english", "chinese"],
        model_name=repo.split("/")[-1],
        eval_results=[result for key, scores in metrics.items() for result in _eval_results(key, scores)] or None,
    )
    sections = [
        _summary_section(config, num_parameters),
        _limitations_section(metrics),
        _usage_section(repo),
        _evaluation_section(metrics),
        extra_sections.strip(),
        "" if "## Training data" in extra_sections else MISSING_DATA_SECTION,
        LICENSE_SECTION,
    ]
    body = "\n\n".join(section for section in sections if section)
    return str(ModelCard(f"---\n{data.to_yaml()}\n---\n\n{body}\n"))


PLACEHOLDER_REPO_ID = "your-name/zhen-model"
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
LOW_BLEU = 10.0

LIMITATIONS = """## Intended use and limitations

zhen models are small and trained on little data: the project's reference recipe uses about 54,000 sentence pairs
(Tatoeba and a small news mix) and hours of CPU time or minutes of one GPU. Commercial systems learn from hundreds of
millions of pairs.

What a model like this can do:

- translate short, everyday sentences of the kind it was trained on (greetings, travel, shopping, family, time,
  weather), one sentence at a time, in both directions;
- serve as a baseline, a teaching example, a small model to test pipelines and deployments (PyTorch, ONNX,
  CTranslate2), or a starting point for fine-tuning on your own sentence pairs.

What it cannot do:

- long or complex sentences and documents; news, legal, medical, financial or technical text. It may write fluent
  sentences that say something else, or drop and repeat words;
- names, numbers, dates, units and rare words are not guaranteed to come through unchanged: check them;
- it sees one sentence at a time, with no context, and carries the biases of its training sentences.

Do not use its output where errors matter without a person who reads both languages checking it."""

MISSING_DATA_SECTION = """## Training data

Not recorded with this export. Whoever publishes this model should name the data it was trained on and its licences
(for example Tatoeba: CC-BY 2.0 FR, attribution: www.manythings.org/anki and tatoeba.org)."""

LICENSE_SECTION = """## Licence

The model weights and the code files in this repository are released under the Apache License 2.0. The training data
keeps its own licence, listed under Training data; where it asks for attribution (Tatoeba's CC-BY 2.0 FR), keep that
attribution when you redistribute the model."""


def count_parameters(config: dict) -> int:
    """Parameters of the model that `config` describes (shared embeddings counted once), from a weightless copy."""
    model_config = configuration_zhen.ZhenConfig.from_dict(config)
    with torch.device("meta"):
        return modeling_zhen.ZhenForConditionalGeneration(model_config).num_parameters()


def _summary_section(config: dict, num_parameters: int) -> str:
    norm = "pre" if config.get("normalize_before", True) else "post"
    architecture = (
        f"d_model {config.get('d_model')}, {config.get('encoder_layers')} encoder and {config.get('decoder_layers')} "
        f"decoder layers, {config.get('encoder_attention_heads')} attention heads, feed-forward "
        f"{config.get('encoder_ffn_dim')}, {config.get('position_embedding_type')} positions, {norm}-norm"
    )
    return "\n".join(
        [
            "# zhen English⇄Chinese translation model",
            "",
            "One encoder-decoder Transformer that translates English→Chinese and Chinese→English. The target language",
            "code (`__zh__` or `__en__`) is forced as the first generated token, so the target language must be given.",
            "",
            f"- Parameters: {num_parameters / 1e6:.1f} M ({num_parameters:,})",
            f"- Architecture: {architecture}",
            f"- Vocabulary: {config.get('vocab_size')} byte-fallback BPE tokens shared by both languages",
            f"- Longest input: {_longest_input(config)}",
        ]
    )


def _longest_input(config: dict) -> str:
    if config.get("position_embedding_type") == "rope":
        return "no position table (RoPE); trained on short sentences"
    return f"{config.get('max_position_embeddings')} tokens (longer inputs are truncated)"


def _limitations_section(metrics: dict) -> str:
    bleus = [scores["bleu"] for scores in metrics.values()]
    if bleus and max(bleus) < LOW_BLEU:
        warning = (
            f"**This checkpoint does not translate usefully yet**: its best BLEU below is {max(bleus):.1f}. It "
            "writes the right language and runs everywhere zhen models run, which makes it good for testing, not for "
            "reading."
        )
        return f"{LIMITATIONS}\n\n{warning}"
    return LIMITATIONS


def _usage_section(repo: str) -> str:
    return f"""## How to use

With [zhen](https://github.com/zhen-nmt/zhen) installed (`pip install zhen-transformer`):

```python
import zhen
zhen.translate(["I love nature."], model="{repo}", src_lang="en", tgt_lang="zh")
```

With Transformers only (the repository carries its code, hence `trust_remote_code=True`):

```python
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer, pipeline

translator = pipeline("translation", model="{repo}", trust_remote_code=True, src_lang="en", tgt_lang="zh")
translator("I love nature.")  # [{{"translation_text": ...}}]

tokenizer = AutoTokenizer.from_pretrained("{repo}", trust_remote_code=True)
model = AutoModelForSeq2SeqLM.from_pretrained("{repo}", trust_remote_code=True)
tokenizer.src_lang = "zh"
inputs = tokenizer(["你好。"], return_tensors="pt")
output = model.generate(**inputs, forced_bos_token_id=tokenizer.get_lang_id("en"), num_beams=4)
tokenizer.batch_decode(output, skip_special_tokens=True)
```

To run it without PyTorch, `zhen-export-onnx {repo} onnx/` writes ONNX encoder and decoder graphs for onnxruntime
(servers, mobile, the browser with onnxruntime-web), and `zhen-export-ct2 {repo} ct2/` converts it for CTranslate2."""


def _evaluation_section(metrics: dict) -> str:
    if not metrics:
        return ""
    rows = [
        f"| {scores.get('direction', key)} | {scores.get('test_set', '')} | {scores.get('sentences', '')} "
        f"| {scores['bleu']:.2f} | {scores['chrf']:.2f} | {_signature_cell(scores)} |"
        for key, scores in metrics.items()
    ]
    return "\n".join(
        [
            "## Evaluation",
            "",
            "sacreBLEU BLEU (tokenizer `zh` for Chinese targets, `13a` for English ones) and chrF, one reference "
            "per sentence.",
            "",
            "| direction | test set | sentences | BLEU | chrF | sacreBLEU signature |",
            "| --- | --- | --- | --- | --- | --- |",
            *rows,
        ]
    )


def _signature_cell(scores: dict) -> str:
    signatures = [scores.get(name) for name in ("bleu_signature", "chrf_signature") if scores.get(name)]
    # A pipe inside a table cell ends the cell, even in a code span, unless escaped.
    return "<br>".join(f"`{signature}`".replace("|", "\\|") for signature in signatures)


def _eval_results(key: str, scores: dict) -> list[EvalResult]:
    """The `model-index` entries of one result: BLEU and chrF on its test set, in its direction."""
    direction = scores.get("direction", key)
    test_set = scores.get("test_set") or "test set"
    common = dict(
        task_type="translation",
        task_name=f"Translation {direction.replace('-', '→')}",
        dataset_type=scores.get("dataset") or re.sub(r"[^\w.-]+", "-", test_set.lower()).strip("-"),
        dataset_name=test_set,
        dataset_config=direction,
        dataset_split=scores.get("split", "test"),
    )
    signature = scores.get("bleu_signature")
    return [
        EvalResult(
            **common,
            metric_type="bleu",
            metric_name="BLEU",
            metric_value=round(float(scores["bleu"]), 2),
            metric_args={"signature": signature} if signature else None,
        ),
        EvalResult(
            **common,
            metric_type="chrf",
            metric_name="chrF",
            metric_value=round(float(scores["chrf"]), 2),
            metric_args={"signature": scores["chrf_signature"]} if scores.get("chrf_signature") else None,
        ),
    ]


# --------------------------------------------------------------------------------------------------------------------
# Exports of training runs


def generation_config_for(model_config, num_beams: int) -> GenerationConfig:
    """The decoding defaults a run exports ([`translation_generation_config`]), with its beam size and early
    stopping; the target language code is forced per call, since one model serves both directions."""
    generation_config = translation_generation_config(model_config.to_dict())
    generation_config.num_beams, generation_config.early_stopping = num_beams, True
    return generation_config


def export_checkpoint(folder, model, tokenizer, *, run_config, metrics: dict, data_summary: dict, state_dict=None,
                      repo_id: str | None = None) -> Path:  # fmt: skip
    """
    Write a trained model as a complete Hub repository: weights (`state_dict`, e.g. gathered by Accelerate), tokenizer,
    the run's configuration, its evaluation (`eval_results.json`) and a model card that describes the training data
    and run. Written under a temporary name and renamed when complete, so `folder` is never half written.

    Args:
        folder: where the checkpoint goes (replaced if it exists).
        model, tokenizer: the trained model (unwrapped) and its tokenizer.
        run_config (`zhen.training_config.TrainingConfig`): the run's configuration.
        metrics (`dict`): an evaluation of the trainer (`{"tatoeba/en-zh/bleu": ..., "step": ...}`).
        data_summary (`dict`): what the run's data preparation reported (`zhen.data.prepare_data`).
        state_dict (*optional*): the weights to save, by default the model's own.
        repo_id (`str`, *optional*): the Hub id the model card's examples load.
    """
    folder = Path(folder)
    tmp = folder.with_name(f".{folder.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp, state_dict=state_dict)
    tokenizer.model_max_length = pipeline_zhen.max_source_tokens(model.config) or run_config.max_source_length
    tokenizer.save_pretrained(tmp)
    run_config.save(tmp / "training_config.json")
    write_json_atomic(tmp / "eval_results.json", metrics)
    card = render_model_card(
        model.config.to_dict(),
        card_metrics(metrics),
        repo_id=repo_id,
        extra_sections=training_sections(run_config, data_summary),
    )
    make_hub_ready(tmp, model_card=card)
    replace_directory(tmp, folder)
    return folder


# --------------------------------------------------------------------------------------------------------------------
# Model-card sections of training runs


# Corpora whose licence zhen knows, recognised by how a training file's path ends (the layout of the project's
# shared data) or by a word in it: (path endings, words, what the model card says about them).
KNOWN_CORPORA = (
    (
        ("tatoeba/train.jsonl.gz", "tatoeba/train.jsonl"),
        ("tatoeba",),
        "Tatoeba sentence pairs (the manythings.org `cmn-eng` export of https://tatoeba.org): short everyday "
        "sentences. Licence: CC-BY 2.0 FR. Attribution: www.manythings.org/anki and tatoeba.org.",
    ),
    (
        ("news/train.jsonl.gz", "news/train.jsonl"),
        (),
        "A mostly-news mix of WMT development and test sets (newsdev2017, newstest2020 and 2021, generaltest2022 "
        "and 2023, the WMT24 test set) and the UN Parallel Corpus v1.0 development set. Licences: the WMT test sets "
        "are released by the WMT shared-task organizers for research use (source texts remain the copyright of their "
        "publishers; references were commissioned by WMT, http://www.statmt.org/); the UN Parallel Corpus v1.0 "
        "(Ziemski, Junczys-Dowmunt and Pouliquen, LREC 2016) is free to use and is provided by the United Nations "
        "without warranty of any kind.",
    ),
    (
        (),
        ("zhen sample corpus", "zhen/sample_data"),
        "The zhen sample corpus: 615 short everyday sentence pairs written by the zhen project for demos and tests. "
        "Licence: CC0 1.0 (public domain).",
    ),
)


def card_metrics(result: dict) -> dict[str, dict]:
    """An evaluation of the trainer (`{"tatoeba/en-zh/bleu": ..., "tatoeba/en-zh/chrf": ...}`) in the per-result form
    of `zhen.hub.render_model_card`."""
    metrics = {}
    for key, bleu in result.items():
        if key.endswith("/bleu"):
            valid_set, direction, _ = key.split("/")
            metrics[f"{valid_set}/{direction}"] = {
                "direction": direction,
                "test_set": f"{valid_set} (validation, step {result.get('step', '?')})",
                "dataset": valid_set,
                "split": "validation",
                "sentences": result.get(f"{valid_set}/{direction}/sentences", ""),
                "bleu": bleu,
                "chrf": result.get(f"{valid_set}/{direction}/chrf", float("nan")),
                "bleu_signature": result.get(f"{valid_set}/{direction}/signature"),
            }
    return metrics


def data_sources(sources: list[str]) -> list[str]:
    """Model-card lines on where training data came from and under which licence, one per corpus: zhen's known
    corpora (see `KNOWN_CORPORA`) with their licence and attribution, anything else with a request to state it."""
    lines, known = [], set()
    for source in sources:
        normalized = source.replace("\\", "/").lower()
        match = next(
            (
                description
                for endings, words, description in KNOWN_CORPORA
                if normalized.endswith(endings) or any(word in normalized for word in words)
            ),
            None,
        )
        if match is None:
            lines.append(
                f"`{source}`: its licence is not recorded here; check it (for a Hub dataset, its dataset card) and "
                "state it before publishing this model."
            )
        elif match not in known:
            known.add(match)
            lines.append(match)
    return lines


def training_sections(config, data_summary: dict) -> str:
    """Model-card sections on the data (with licences and attribution) and the training run, from the run's
    configuration and data summary."""
    sources = _training_sources(config, data_summary)
    cleaning = data_summary.get("cleaning", "").strip()
    lines = [
        "## Training data",
        "",
        *(f"- {line}" for line in data_sources(sources)),
        "",
        f"Pairs after cleaning: {data_summary.get('train_pairs', '?')}; training examples "
        f"({_directions_text(config.directions)}): {data_summary.get('train_examples', '?')}. Chinese targets "
        f"converted to Simplified Chinese (OpenCC t2s): {'yes' if config.simplify_chinese else 'no'}.",
    ]
    if cleaning:
        lines += ["", "Cleaning:", "", "```", cleaning, "```"]
    lines += [
        "",
        "## Training",
        "",
        f"{_origin_text(config)} with `zhen-train`: {_model_text(config)}; batches of up to {config.max_tokens} "
        f"tokens x {config.gradient_accumulation_steps} accumulation step(s); AdamW, peak learning rate "
        f"{config.learning_rate}, {config.lr_scheduler} schedule with {config.warmup_steps} warmup steps; label "
        f"smoothing {config.label_smoothing}. Validation BLEU is measured on {config.eval_bleu_samples} sentences per "
        f"set and direction with {_beams_text(config.eval_num_beams)}. The full configuration is in "
        "`training_config.json`, the curves in `training_curve.png`.",
    ]
    return "\n".join(lines) + "\n"


def _training_sources(config, data_summary: dict) -> list[str]:
    if getattr(config, "dataset", None):
        return [config.dataset]
    if getattr(config, "train_files", None):
        return list(config.train_files)
    return [data_summary.get("train_source") or "zhen sample corpus"]


def _origin_text(config) -> str:
    init_from = getattr(config, "init_from", None)
    return f"Trained from the checkpoint `{init_from}`" if init_from else "Trained from scratch"


def _directions_text(directions: str) -> str:
    return "each pair used in both directions" if directions == "both" else directions.replace("-", "→")


def _beams_text(num_beams: int) -> str:
    return "greedy search" if num_beams == 1 else f"beam search ({num_beams} beams)"


def _model_text(config) -> str:
    """The model as "the `small` preset" plus its overrides in words, never as a Python dict."""
    overrides = ", ".join(f"{key} {_value_text(value)}" for key, value in sorted(config.model_overrides.items()))
    return f"the `{config.preset}` preset" + (f" with {overrides}" if overrides else "")


def _value_text(value) -> str:
    if isinstance(value, dict):
        return "(" + ", ".join(f"{key} {_value_text(item)}" for key, item in value.items()) + ")"
    return str(value)


def _read_json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _write_json(path: Path, data: dict) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")


__all__ = [
    "card_metrics",
    "count_parameters",
    "custom_pipelines_entry",
    "data_sources",
    "export_checkpoint",
    "generation_config_for",
    "make_hub_ready",
    "missing_hub_files",
    "push_to_hub",
    "register_pipeline",
    "render_model_card",
    "save_for_hub",
    "training_sections",
    "translation_generation_config",
]
