"""The configuration of a `zhen-train` run: one dataclass, filled from defaults, a YAML/JSON file and CLI flags.

Precedence is defaults < `--config FILE` < flags. With no training data named anywhere, the packaged sample recipe
(`zhen/sample_data/sample_recipe.yaml`) takes the place of the defaults, so a bare `zhen-train` trains a small model on
the bundled sample corpus. Every run writes the fully resolved configuration to `<output_dir>/training_config.json`.
"""

import argparse
import dataclasses
import json
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml


SAMPLE_RECIPE = Path(__file__).parent / "sample_data" / "sample_recipe.yaml"
SCHEDULERS = ("inverse_sqrt", "cosine", "constant")
MIXED_PRECISION = ("auto", "no", "bf16", "fp16")


def _help(text: str, **kwargs) -> Any:
    return field(metadata={"help": text}, **kwargs)


@dataclass
class TrainingConfig:
    """Everything a training run needs. Field names are the CLI flags (`max_tokens` is `--max-tokens`)."""

    # --- data
    train_files: list[str] | None = _help("Training corpora (JSON Lines/TSV/Parquet, .gz ok).", default=None)
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
    lr_scheduler: str = _help("inverse_sqrt (the Transformer paper's), cosine or constant.", default="inverse_sqrt")
    warmup_steps: int = _help("Linear warmup steps.", default=4000)
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
        """Fail before any work on values that cannot run, naming the field and the fix."""
        if self.lr_scheduler not in SCHEDULERS:
            raise ValueError(f"lr_scheduler={self.lr_scheduler!r} is not one of {SCHEDULERS}.")
        if self.mixed_precision not in MIXED_PRECISION:
            raise ValueError(f"mixed_precision={self.mixed_precision!r} is not one of {MIXED_PRECISION}.")
        if self.directions not in ("en-zh", "zh-en", "both"):
            raise ValueError(f"directions={self.directions!r} is not one of en-zh, zh-en, both.")
        if self.train_files and self.dataset:
            raise ValueError("Give training data either as train_files or as a Hub dataset, not both.")
        if self.max_tokens < max(self.max_source_length, self.max_target_length):
            raise ValueError(
                f"max_tokens={self.max_tokens} cannot hold one example of max_source_length={self.max_source_length}"
                f" / max_target_length={self.max_target_length} tokens; raise max_tokens or lower the lengths."
            )
        for name in ("max_tokens", "gradient_accumulation_steps", "eval_steps", "save_steps", "logging_steps"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name}={getattr(self, name)} must be positive.")
        if not 0 <= self.label_smoothing < 1:
            raise ValueError(f"label_smoothing={self.label_smoothing} must be in [0, 1).")

    @property
    def uses_sample_data(self) -> bool:
        return not self.train_files and not self.dataset

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def save(self, path: str | Path):
        Path(path).write_text(json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


FIELDS = {f.name: f for f in dataclasses.fields(TrainingConfig)}


def read_config_file(path: str | Path) -> dict[str, Any]:
    """Read a YAML or JSON run configuration, rejecting unknown keys with the list of known ones."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"Configuration file {path} does not exist.")
    values = yaml.safe_load(path.read_text(encoding="utf-8")) or {}  # YAML is a superset of JSON
    if not isinstance(values, dict):
        raise ValueError(f"{path} must hold a mapping of configuration fields, not {type(values).__name__}.")
    unknown = sorted(set(values) - set(FIELDS))
    if unknown:
        raise ValueError(f"{path}: unknown configuration field(s) {unknown}; known fields: {sorted(FIELDS)}.")
    return values


def _parse_override(text: str) -> tuple[str, Any]:
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"expected key=value, got {text!r}")
    key, value = text.split("=", 1)
    return key, yaml.safe_load(value)  # 256 -> int, true -> bool, rope -> str


def _argument_for(f: dataclasses.Field) -> dict[str, Any]:
    annotation = f.type if not isinstance(f.type, str) else eval(f.type, vars(typing) | {"Any": Any})  # noqa: S307
    options = [a for a in typing.get_args(annotation) if a is not type(None)]
    base = options[0] if isinstance(annotation, types.UnionType) else annotation
    if base is bool:
        return {"action": argparse.BooleanOptionalAction}
    if typing.get_origin(base) is list:
        return {"nargs": "*", "type": str}
    if typing.get_origin(base) is dict:
        return {"nargs": "*", "type": _parse_override, "metavar": "KEY=VALUE"}
    return {"type": base}


def build_parser(description: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description, argument_default=argparse.SUPPRESS)
    parser.add_argument("--config", help="YAML or JSON file of configuration fields; flags override it.")
    for f in dataclasses.fields(TrainingConfig):
        parser.add_argument("--" + f.name.replace("_", "-"), dest=f.name, help=f.metadata["help"], **_argument_for(f))
    return parser


def resolve_config(argv: list[str] | None = None, **overrides) -> TrainingConfig:
    """Defaults (or the sample recipe when no data is named) < `--config` file < flags < `overrides`.
    `model_overrides` merge key by key along the same order."""
    args = vars(build_parser().parse_args(argv))
    file_values = read_config_file(args.pop("config")) if "config" in args else {}
    if "model_overrides" in args:
        args["model_overrides"] = dict(args["model_overrides"])
    layers = [file_values, args, overrides]
    names_data = any(layer.get(key) for layer in layers for key in ("train_files", "dataset"))
    layers.insert(0, {} if names_data else read_config_file(SAMPLE_RECIPE))
    values = {key: value for layer in layers for key, value in layer.items()}
    values["model_overrides"] = {k: v for layer in layers for k, v in layer.get("model_overrides", {}).items()}
    return TrainingConfig(**values)
