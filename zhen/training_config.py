# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""The configuration of a `zhen-train` run: one dataclass, filled from defaults, a YAML/JSON file and given values
([`make_config`]; `zhen-train` gives its flags).

Precedence is defaults < config file < given values. With no training data named anywhere, the packaged sample recipe
(`zhen/sample_data/sample_recipe.yaml`) takes the place of the defaults, so a bare `zhen-train` trains a small model on
the bundled sample corpus. Every run writes the fully resolved configuration to `<output_dir>/training_config.json`.

With `--resume`, that recorded configuration takes the place of the defaults: a resumed run needs only `--output-dir`
and `--resume`, and whatever else it gives is a change. Changes to what the checkpoints were made with (the data, the
tokenizer, the model, the optimizer, the batches: [`FIXED_ON_RESUME`]) are refused; the others (how long to train,
how often to evaluate and save, ...: [`CHANGEABLE_ON_RESUME`]) are applied and listed, and recorded as what ran.

Every value is checked when the configuration is built, before any work: its type (the dataclass annotations; YAML
numbers written as strings such as `7e-4` are read as numbers), its range, and names such as the preset and the
`model_overrides` keys.
"""

import dataclasses
import json
import logging
import math
import os
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .safe_io import atomic_write, is_clearly_a_path


logger = logging.getLogger(__name__)

SAMPLE_RECIPE = Path(__file__).parent / "sample_data" / "sample_recipe.yaml"
RECIPES_DIR = Path(__file__).parent / "recipes"  # recipes shipped with zhen, found by name (`--config cpu-bf16`)
RECORD_FILE = "training_config.json"
TRAINED_TOKENIZER_DIR = "tokenizer"  # where a run keeps the tokenizer it trained (zhen.data.TOKENIZER_DIR)
SCHEDULERS = ("inverse_sqrt", "cosine", "linear", "constant")
MIXED_PRECISION = ("auto", "no", "bf16", "fp16")
ATTN_IMPLEMENTATIONS = ("eager", "sdpa", "flash_attention_2", "flash_attention_3", "flex_attention")
# model_overrides keys the trainer sets itself, with the option that sets them.
MANAGED_MODEL_FIELDS = {
    "vocab_size": "--vocab-size (the model's vocabulary follows the tokenizer)",
    "pad_token_id": "the tokenizer",
    "bos_token_id": "the tokenizer",
    "eos_token_id": "the tokenizer",
    "decoder_start_token_id": "the tokenizer",
    "label_smoothing": "--label-smoothing",
    "is_encoder_decoder": "the model (always True)",
}


def _help(text: str, **kwargs) -> Any:
    return field(metadata={"help": text}, **kwargs)


@dataclass
class TrainingConfig:
    """Everything a training run needs. Field names are the CLI flags (`max_tokens` is `--max-tokens`)."""

    # --- data
    train_files: list[str] | None = _help(
        "Training corpora (JSON Lines/TSV/Parquet, .gz ok); `name=path` names one (default name: the file's folder).",
        default=None,
    )
    train_weights: dict[str, float] = _help(
        "Sampling weight per training corpus, by name (tatoeba=4): an epoch holds that corpus this many times over "
        "(a fraction: that share of it, drawn anew each epoch). Unnamed corpora have weight 1.",
        default_factory=dict,
    )
    valid_files: list[str] | None = _help(
        "Validation sets, each scored on its own; `name=path` names one (default name: the file's folder).",
        default=None,
    )
    dataset: str | None = _help("A Hub dataset to train on instead of files, e.g. wmt/wmt19.", default=None)
    dataset_config: str | None = _help("Its configuration, e.g. zh-en.", default=None)
    train_split: str = _help("Hub dataset split for training.", default="train")
    valid_split: str | None = _help("Hub dataset split for validation.", default="validation")
    en_column: str = _help("Name of the English column.", default="en")
    zh_column: str = _help("Name of the Chinese column.", default="zh")
    skip_malformed: bool = _help("Skip and count malformed lines instead of stopping.", default=False)
    language_check: bool = _help(
        "Stop when the en and zh columns of a file look swapped (by their share of Chinese characters).", default=True
    )
    directions: str = _help("en-zh, zh-en, or both (one model, each pair used both ways).", default="both")
    simplify_chinese: bool = _help("Convert Chinese targets to Simplified (OpenCC t2s).", default=True)
    max_chars: int = _help("Drop pairs with a side longer than this many characters.", default=400)
    max_length_ratio: float = _help("Drop pairs whose lengths differ by more than this factor.", default=3.0)
    max_source_length: int = _help("Drop training pairs whose source has more tokens.", default=128)
    max_target_length: int = _help("Drop training pairs whose target has more tokens.", default=128)
    valid_size: int = _help("Without validation files, hold out this many training pairs.", default=1000)
    num_proc: int | None = _help("Processes for datasets.map (tokenization, cleaning).", default=None)

    # --- tokenizer
    tokenizer: str | None = _help("A trained zhen tokenizer; trained on the training data if not given.", default=None)
    vocab_size: int = _help("Vocabulary size when the tokenizer is trained here.", default=32000)
    tokenizer_min_frequency: int = _help("Minimum pair frequency for a BPE merge.", default=2)

    # --- model
    preset: str = _help("Model size: tiny, small or base.", default="small")
    model_overrides: dict[str, Any] = _help(
        "ZhenConfig fields to override, e.g. position_embedding_type=rope d_model=256.", default_factory=dict
    )
    init_from: str | None = _help("Start from this zhen checkpoint instead of a fresh model.", default=None)
    attn_implementation: str = _help("eager, sdpa, flash_attention_2, flex_attention.", default="sdpa")
    gradient_checkpointing: bool = _help("Trade compute for memory.", default=False)

    # --- optimisation
    output_dir: str = _help("Where checkpoints, logs and the exported model go.", default="runs/zhen")
    seed: int = _help("Seed for initialisation, data order and dropout.", default=42)
    max_tokens: int = _help("Token budget of one batch per process (batch size x longest side).", default=4096)
    gradient_accumulation_steps: int = _help("Batches per optimizer step.", default=1)
    num_epochs: float = _help("Epochs to train (ignored when max_steps is set).", default=20)
    max_steps: int | None = _help("Optimizer steps to train.", default=None)
    max_minutes: float | None = _help(
        "Stop gracefully (evaluate, checkpoint, export) after this many minutes of training steps (over resumes).",
        default=None,
    )
    learning_rate: float = _help("Peak learning rate.", default=7e-4)
    lr_scheduler: str = _help(
        "inverse_sqrt (the Transformer paper's), cosine, linear (both decay to min_lr_ratio at the end of max_steps, "
        "or of max_minutes when that comes first) or constant.",
        default="inverse_sqrt",
    )
    warmup_steps: int = _help("Linear warmup steps.", default=4000)
    warmup_ratio: float | None = _help(
        "Warm up over this share of the training (of max_steps, or of max_minutes when that ends first) instead of "
        "warmup_steps.",
        default=None,
    )
    min_lr_ratio: float = _help("Cosine schedule floor, as a fraction of the peak.", default=0.0)
    weight_decay: float = _help("AdamW weight decay.", default=0.0)
    adam_beta1: float = _help("AdamW beta1.", default=0.9)
    adam_beta2: float = _help("AdamW beta2.", default=0.98)
    adam_epsilon: float = _help("AdamW epsilon.", default=1e-8)
    max_grad_norm: float = _help("Gradient clipping norm (0 disables).", default=1.0)
    label_smoothing: float = _help("Label smoothing of the training loss.", default=0.1)
    dropout: float | None = _help("Override the preset's dropout.", default=None)
    mixed_precision: str = _help("auto (bf16 where the hardware has it), no, bf16 or fp16 (GPU).", default="auto")
    cpu: bool = _help("Train on the CPU even if a GPU is present.", default=False)
    cuda_graphs: bool = _help(
        "On one CUDA GPU, replay each batch shape's forward and backward as a CUDA graph where that measures faster "
        "than running it eagerly (float32 or bf16); no effect on CPUs or with several processes.",
        default=True,
    )

    # --- evaluation, checkpoints, export
    eval_steps: int = _help("Evaluate every this many optimizer steps.", default=1000)
    eval_bleu_samples: int = _help("Sentences per validation set and direction scored with BLEU.", default=200)
    eval_num_beams: int = _help("Beam size for validation BLEU (1 = greedy).", default=1)
    early_stopping_patience: int | None = _help("Stop after this many evaluations without a BLEU gain.", default=None)
    save_steps: int = _help("Save a resumable checkpoint every this many steps.", default=1000)
    save_total_limit: int = _help("Keep this many most recent checkpoints.", default=3)
    average_last: int = _help("Average the last K checkpoints for export when it scores better.", default=0)
    logging_steps: int = _help("Log training loss every this many steps.", default=50)
    report_to: list[str] = _help("Accelerate trackers, e.g. tensorboard.", default_factory=list)
    resume: bool = _help("Continue from the latest checkpoint in output_dir.", default=False)
    export_num_beams: int = _help("Beam size written to the exported generation_config.json.", default=4)
    push_to_hub: str | None = _help("Push the exported model to this Hub repository (needs a token).", default=None)
    hub_private: bool = _help("Create the Hub repository as private.", default=False)

    def __post_init__(self):
        self.check()

    def check(self):
        """Fail before any work on values that cannot run, naming the field and the fix. Values of a compatible type
        are converted (`"7e-4"` and `7` to `7e-4` and `7.0` for a float, `"a.jsonl"` to `["a.jsonl"]` for a list)."""
        for f in dataclasses.fields(self):
            setattr(self, f.name, coerce(f.name, getattr(self, f.name), field_type(f)))
        self._check_ranges()
        if self.preset not in _presets():
            raise ValueError(f"preset={self.preset!r} is not a zhen preset; choose one of {sorted(_presets())}.")
        if self.attn_implementation not in ATTN_IMPLEMENTATIONS:
            raise ValueError(f"attn_implementation={self.attn_implementation!r} is not one of {ATTN_IMPLEMENTATIONS}.")
        self._check_model_overrides()
        if self.lr_scheduler not in SCHEDULERS:
            raise ValueError(f"lr_scheduler={self.lr_scheduler!r} is not one of {SCHEDULERS}.")
        if self.mixed_precision not in MIXED_PRECISION:
            raise ValueError(f"mixed_precision={self.mixed_precision!r} is not one of {MIXED_PRECISION}.")
        if self.directions not in ("en-zh", "zh-en", "both"):
            raise ValueError(f"directions={self.directions!r} is not one of en-zh, zh-en, both.")
        if self.train_files and self.dataset:
            raise ValueError("Give training data either as train_files or as a Hub dataset, not both.")
        self._check_train_weights()
        if self.max_tokens < max(self.max_source_length, self.max_target_length):
            raise ValueError(
                f"max_tokens={self.max_tokens} cannot hold one example of max_source_length={self.max_source_length}"
                f" / max_target_length={self.max_target_length} tokens; raise max_tokens or lower the lengths."
            )

    def _check_ranges(self):
        if self.max_steps == 0:
            raise ValueError(
                "max_steps=0 would train nothing: give a positive number of optimizer steps, or leave max_steps unset "
                "to train num_epochs epochs."
            )
        for name, rule in RANGES.items():
            value = getattr(self, name)
            if value is not None and not rule[0](value):
                default = FIELDS[name].default
                hint = f" (default: {default})" if default is not dataclasses.MISSING and default is not None else ""
                raise ValueError(f"{name}={value!r} is out of range: it must be {rule[1]}{hint}.")
        from .tokenization_zhen import RESERVED_TOKENS

        if self.vocab_size <= len(RESERVED_TOKENS):
            raise ValueError(
                f"vocab_size={self.vocab_size} leaves no room for learned tokens: {len(RESERVED_TOKENS)} ids are taken "
                "by the special and byte tokens. Use a few thousand or more."
            )

    def _check_train_weights(self):
        if not self.train_weights:
            return
        if not self.train_files:
            raise ValueError(
                f"train_weights {self.train_weights} weigh training files against each other; give train_files."
            )
        names = sorted(named_files(self.train_files, "train"))
        for name, weight in self.train_weights.items():
            if name not in names:
                raise ValueError(
                    f"train_weights names {name!r}, which is not a training corpus: the corpora are {names} (named "
                    "by their folder, or `name=path` in train_files)."
                )
            weight = coerce(f"train_weights.{name}", weight, float)
            if weight <= 0:
                raise ValueError(f"train_weights.{name}={weight!r} is out of range: it must be > 0.")
            self.train_weights[name] = weight

    def corpus_weights(self) -> list[float]:
        """The sampling weight of each training file, in the order of `train_files`."""
        return [self.train_weights.get(name, 1.0) for name in named_files(self.train_files or [], "train")]

    def _check_model_overrides(self):
        fields = zhen_config_fields()
        unknown = sorted(set(self.model_overrides) - set(fields))
        if unknown:
            raise ValueError(
                f"model_overrides: unknown ZhenConfig field(s) {unknown} (a typo?). Valid fields: "
                f"{sorted(set(fields) - set(MANAGED_MODEL_FIELDS))}."
            )
        for name in self.model_overrides:
            if name in MANAGED_MODEL_FIELDS:
                raise ValueError(f"model_overrides: {name} is set by {MANAGED_MODEL_FIELDS[name]}; leave it out.")
        self.model_overrides = {
            name: coerce(f"model_overrides.{name}", value, fields[name]) for name, value in self.model_overrides.items()
        }
        if self.init_from and self.model_overrides:
            raise ValueError(
                f"model_overrides {sorted(self.model_overrides)} have no effect with init_from={self.init_from!r} "
                "(the checkpoint's own configuration is used); leave them out."
            )
        from .configuration_zhen import ZhenConfig

        dropout = {} if self.dropout is None else {"dropout": self.dropout}
        try:
            ZhenConfig.from_preset(self.preset, **{**self.model_overrides, **dropout})
        except (TypeError, ValueError) as error:
            raise ValueError(f"model_overrides {self.model_overrides} do not make a valid model: {error}") from None

    def check_files(self):
        """Fail before any work on files and folders the run reads that do not exist."""
        for kind, flag, entries in (("Training", "train", self.train_files), ("Validation", "valid", self.valid_files)):
            for entry in entries or []:
                path = entry.rpartition("=")[2] if "=" in entry else entry
                if not Path(path).is_file():
                    raise FileNotFoundError(f"{kind} file not found: {path} (--{flag}-files).")
        for name in ("tokenizer", "init_from"):
            path = getattr(self, name)
            if path and not os.path.isdir(path) and is_clearly_a_path(path):
                flag = "--" + name.replace("_", "-")
                raise FileNotFoundError(f"No folder at {path} ({flag}): check the path.")

    @property
    def uses_sample_data(self) -> bool:
        return not self.train_files and not self.dataset

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def save(self, path: str | Path):
        with atomic_write(path) as file:
            file.write(json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n")


FIELDS = {f.name: f for f in dataclasses.fields(TrainingConfig)}


def named_files(entries: list[str], default: str) -> dict[str, str]:
    """`{name: path}` of `name=path` or `path` entries; a path is named by its folder (or `default`), a name taken
    twice gets a suffix (`news`, `news-1`)."""
    named = {}
    for entry in entries:
        name, _, path = entry.rpartition("=") if "=" in entry else (Path(entry).parent.name or default, "", entry)
        if name in named:
            name = f"{name}-{len(named)}"
        named[name] = path
    return named


def _positive(value) -> bool:
    return value > 0


def _non_negative(value) -> bool:
    return value >= 0


def _below_one(value) -> bool:
    return 0 <= value < 1


RANGES = {
    **dict.fromkeys(
        ("max_tokens", "gradient_accumulation_steps", "eval_steps", "save_steps", "logging_steps", "num_epochs",
         "max_steps", "max_minutes", "learning_rate", "adam_epsilon", "max_chars", "max_source_length",
         "max_target_length", "valid_size", "tokenizer_min_frequency", "eval_num_beams", "export_num_beams",
         "save_total_limit", "num_proc", "early_stopping_patience"),
        (_positive, "> 0"),
    ),
    **dict.fromkeys(
        ("warmup_steps", "weight_decay", "max_grad_norm", "eval_bleu_samples", "average_last", "seed"),
        (_non_negative, ">= 0"),
    ),
    **dict.fromkeys(("label_smoothing", "dropout", "adam_beta1", "adam_beta2"), (_below_one, "in [0, 1)")),
    "min_lr_ratio": (lambda value: 0 <= value <= 1, "in [0, 1]"),
    "warmup_ratio": (lambda value: 0 <= value < 1, "in [0, 1)"),
    "max_length_ratio": (lambda value: value >= 1, ">= 1 (the longer side over the shorter)"),
}  # fmt: skip

# What a resumed run cannot change: its checkpoints were made with these (the data and its order, the tokenizer, the
# model's shape, the optimizer's hyperparameters, which its saved state would silently restore, the schedule's shape).
FIXED_ON_RESUME = frozenset(
    {"train_files", "train_weights", "valid_files", "dataset", "dataset_config", "train_split", "valid_split",
     "en_column", "zh_column", "skip_malformed", "directions", "simplify_chinese", "max_chars", "max_length_ratio",
     "max_source_length", "max_target_length", "valid_size", "tokenizer", "vocab_size", "tokenizer_min_frequency",
     "preset", "model_overrides", "init_from", "seed", "max_tokens", "gradient_accumulation_steps", "learning_rate",
     "lr_scheduler", "warmup_steps", "warmup_ratio", "min_lr_ratio", "weight_decay", "adam_beta1", "adam_beta2",
     "adam_epsilon"}
)  # fmt: skip
# What a resumed run may change: applied from the resume on, listed in the log and recorded.
CHANGEABLE_ON_RESUME = frozenset(
    {"num_epochs", "max_steps", "max_minutes", "eval_steps", "eval_bleu_samples", "eval_num_beams",
     "early_stopping_patience", "save_steps", "save_total_limit", "average_last", "logging_steps", "report_to",
     "export_num_beams", "push_to_hub", "hub_private", "max_grad_norm", "label_smoothing", "dropout",
     "mixed_precision", "cpu", "cuda_graphs", "attn_implementation", "gradient_checkpointing", "num_proc",
     "language_check"}
)  # fmt: skip
# output_dir and resume say which run, not how it trains.


# --------------------------------------------------------------------------------------------------------------------
# Types


def field_type(f: dataclasses.Field):
    return f.type if not isinstance(f.type, str) else eval(f.type, vars(typing) | {"Any": Any})  # noqa: S307


def zhen_config_fields() -> dict[str, Any]:
    """The fields of `ZhenConfig` a `model_overrides` key may name, with their types."""
    from .configuration_zhen import ZhenConfig

    fields = {}
    for name, annotation in ZhenConfig.__dict__.get("__annotations__", {}).items():
        if isinstance(annotation, str):
            try:
                annotation = eval(annotation, vars(typing) | {"Any": Any})  # noqa: S307
            except NameError:
                annotation = Any
        if typing.get_origin(annotation) is not typing.ClassVar:
            fields[name] = annotation
    fields.setdefault("rope_theta", float)  # the legacy keyword ZhenConfig folds into rope_parameters
    return fields


def _presets() -> dict:
    from .configuration_zhen import PRESETS

    return PRESETS


def coerce(name: str, value: Any, annotation: Any) -> Any:
    """
    `value` as the type `annotation` names (`int`, `float`, `str`, `bool`, `list[str]`, `dict`, or `X | None`).

    Raises:
        `ValueError` naming the field, the value and the type it needs.
    """
    options = typing.get_args(annotation) if isinstance(annotation, types.UnionType) else (annotation,)
    if value is None:
        if type(None) in options:
            return None
        raise ValueError(f"{name} has no value; it needs {_type_name(annotation)}.")
    base = next(option for option in options if option is not type(None))
    converted = _convert(name, value, base)
    if converted is _INVALID:
        if name == "mixed_precision" and value is True:
            raise ValueError(
                f"mixed_precision=True is ambiguous: write one of {MIXED_PRECISION} (quoted in YAML, which reads "
                "no/yes/on/off as booleans)."
            )
        hint = ""
        if isinstance(value, bool) and base is not bool:
            hint = " YAML reads yes/no/on/off/true/false as booleans: quote the value."
        elif isinstance(value, (int, float)) and base is str:
            hint = f' Quote it in YAML ({name}: "{value}").'
        raise ValueError(f"{name}={value!r} is not {_type_name(base)}.{hint}")
    return converted


_INVALID = object()


def _convert(name: str, value: Any, base: Any) -> Any:
    origin = typing.get_origin(base)
    if name == "mixed_precision" and value is False:  # YAML reads `mixed_precision: no` as False
        return "no"
    if base is bool:
        return value if isinstance(value, bool) else _INVALID
    if base is int:
        if isinstance(value, str):
            value = _number(value)
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        return value if isinstance(value, int) and not isinstance(value, bool) else _INVALID
    if base is float:
        if isinstance(value, str):
            value = _number(value)
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        return float(value) if ok else _INVALID
    if base is str:
        return value if isinstance(value, str) else _INVALID
    if origin is list:
        value = [value] if isinstance(value, str) else value
        ok = isinstance(value, (list, tuple)) and all(isinstance(item, str) for item in value)
        return list(value) if ok else _INVALID
    if base is dict or origin is dict:
        return dict(value) if isinstance(value, dict) and all(isinstance(k, str) for k in value) else _INVALID
    return value  # Any


def _number(text: str):
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return _INVALID


def _type_name(annotation: Any) -> str:
    names = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}
    options = typing.get_args(annotation) if isinstance(annotation, types.UnionType) else (annotation,)
    parts = []
    for option in options:
        if option is type(None):
            continue
        origin = typing.get_origin(option)
        parts.append(names.get(option) or ("a list of strings" if origin is list else "a mapping"))
    return " or ".join(parts)


def read_config_file(path: str | Path) -> dict[str, Any]:
    """Read a YAML or JSON run configuration, or a recipe shipped with zhen by its name (`cpu-bf16` is
    `zhen/recipes/cpu-bf16.yaml`), rejecting unknown keys with the list of known ones."""
    path = recipe_path(path)
    if not path.is_file():
        raise FileNotFoundError(
            f"Configuration file {path} does not exist; give a YAML/JSON file or one of zhen's recipes: "
            f"{sorted(p.stem for p in RECIPES_DIR.glob('*.yaml'))}."
        )
    values = yaml.safe_load(path.read_text(encoding="utf-8")) or {}  # YAML is a superset of JSON
    if not isinstance(values, dict):
        raise ValueError(f"{path} must hold a mapping of configuration fields, not {type(values).__name__}.")
    unknown = sorted(set(values) - set(FIELDS))
    if unknown:
        raise ValueError(f"{path}: unknown configuration field(s) {unknown}; known fields: {sorted(FIELDS)}.")
    return values


def recipe_path(name_or_path: str | Path) -> Path:
    """`name_or_path` itself, or the shipped recipe of that name when no such file exists."""
    path = Path(name_or_path)
    recipe = RECIPES_DIR / f"{path.name}.yaml"
    return recipe if not path.exists() and path.name == str(name_or_path) and recipe.is_file() else path


def make_config(values: dict[str, Any] | None = None, config_file: str | Path | None = None) -> TrainingConfig:
    """A run's configuration: the defaults (or the sample recipe when no data is named, or the recorded configuration
    of a resumed run) < a YAML/JSON `config_file` < `values`, field by field; `model_overrides` merge key by key along
    the same order, as do `train_weights`. Every value is checked before any work.

    With `resume`, the configuration recorded in `<output_dir>/training_config.json` replaces the defaults and the
    sample recipe, so a resumed run is the recorded one plus what is given ([`check_resumed_config`] decides which
    changes are allowed).

    Example:

    ```python
    >>> from zhen.training import train
    >>> from zhen.training_config import make_config
    >>> train(make_config({"train_files": ["train.jsonl"], "preset": "small", "max_steps": 20000}))
    ```
    """
    given = [read_config_file(config_file) if config_file is not None else {}, dict(values or {})]
    layers = [_base_values(given), *given]
    merged = {key: value for layer in layers for key, value in layer.items()}
    for name in ("model_overrides", "train_weights"):
        merged[name] = {k: v for layer in layers for k, v in (layer.get(name) or {}).items()}
    return TrainingConfig(**merged)


def _base_values(given: list[dict]) -> dict:
    """What the given values are laid over: the recorded configuration of a resumed run, else the defaults (`{}`),
    or the sample recipe when no data is named."""
    names_data = any(layer.get(key) for layer in given for key in ("train_files", "dataset"))
    base = {} if names_data else read_config_file(SAMPLE_RECIPE)
    if any(layer.get("init_from") for layer in given):
        base.pop("model_overrides", None)  # a checkpoint brings its own model configuration
    last = {key: value for layer in given for key, value in layer.items()}
    if last.get("resume"):
        output_dir = last.get("output_dir") or base.get("output_dir") or FIELDS["output_dir"].default
        recorded = read_recorded_config(output_dir)
        if recorded is not None:
            recorded.pop("resume", None)
            if _is_trained_here(recorded.get("tokenizer"), recorded.get("output_dir")):
                recorded["tokenizer"] = None  # the run's own tokenizer, found again in output_dir from any folder
            return recorded
    return base


def _is_trained_here(tokenizer: str | None, output_dir: str | None) -> bool:
    return bool(tokenizer and output_dir) and Path(tokenizer) == Path(output_dir) / TRAINED_TOKENIZER_DIR


# --------------------------------------------------------------------------------------------------------------------
# Resuming


def read_recorded_config(output_dir: str | Path) -> dict[str, Any] | None:
    """The configuration a run recorded in `<output_dir>/training_config.json` (fields this version knows), or
    `None` if it recorded none."""
    path = Path(output_dir) / RECORD_FILE
    if not path.is_file():
        return None
    try:
        values = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ValueError(
            f"{path} cannot be read ({error}). It records the run's settings, which --resume compares with yours: "
            "restore it, or start a new run in another --output-dir."
        ) from None
    if not isinstance(values, dict):
        raise ValueError(f"{path} does not hold a configuration; restore it or start a new run elsewhere.")
    return {key: value for key, value in values.items() if key in FIELDS}


def check_resumed_config(config: TrainingConfig, recorded: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """
    Compare a resumed run's configuration with the one the run recorded.

    Returns:
        The changes to apply, `{field: (recorded, given)}`, all in [`CHANGEABLE_ON_RESUME`]; they are logged.

    Raises:
        `ValueError` listing every change to a field of [`FIXED_ON_RESUME`], with the recorded and the given value.
    """
    recorded = dict(recorded)
    if _is_trained_here(recorded.get("tokenizer"), recorded.get("output_dir")):
        recorded["tokenizer"] = None
    given = config.to_dict()
    if _is_trained_here(given["tokenizer"], config.output_dir):
        given["tokenizer"] = None
    changes = {
        name: (recorded[name], given[name])
        for name in FIELDS
        if name not in ("output_dir", "resume")
        and name in recorded
        and not _same_setting(name, recorded[name], given[name])
    }
    refused = {name: change for name, change in changes.items() if name in FIXED_ON_RESUME}
    if refused:
        listing = "; ".join(f"{name}: recorded {old!r}, given {new!r}" for name, (old, new) in refused.items())
        raise ValueError(
            f"--resume cannot change what the run in {config.output_dir} was started with ({listing}). Leave these "
            f"out (--resume takes every setting from {Path(config.output_dir) / RECORD_FILE}), or start a new run "
            "with another --output-dir."
        )
    if changes and os.environ.get("RANK", "0") == "0":
        listing = ", ".join(f"{name} {old!r} -> {new!r}" for name, (old, new) in changes.items())
        logger.warning(f"Resuming with changed settings, applied from here on and recorded: {listing}.")
    return changes


def _same_setting(name: str, recorded: Any, given: Any) -> bool:
    if name in ("train_files", "valid_files", "tokenizer", "init_from") and recorded and given:
        recorded, given = _as_list(recorded), _as_list(given)
        return len(recorded) == len(given) and all(map(_same_path_entry, recorded, given))
    if name == "model_overrides":
        return dict(recorded or {}) == dict(given or {})
    return recorded == given


def _as_list(value: str | list[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def _same_path_entry(recorded: str, given: str) -> bool:
    """Whether two path entries (`path` or `name=path`) name the same file. A relative recorded path is relative to
    the folder the run was started from: when it names nothing from the current folder, it matches a given path that
    ends with it."""
    recorded_label, _, recorded_path = recorded.rpartition("=") if "=" in recorded else ("", "", recorded)
    given_label, _, given_path = given.rpartition("=") if "=" in given else ("", "", given)
    if recorded_label != given_label:
        return False
    if os.path.realpath(recorded_path) == os.path.realpath(given_path):
        return True
    recorded_parts = Path(os.path.normpath(recorded_path)).parts
    given_parts = Path(os.path.realpath(given_path)).parts
    unresolvable = not os.path.isabs(recorded_path) and not os.path.exists(recorded_path)
    return unresolvable and given_parts[-len(recorded_parts) :] == recorded_parts
