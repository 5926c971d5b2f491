# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""Fine-tuning a zhen checkpoint with 🤗 `Seq2SeqTrainer`.

[`finetune`] reads parallel files with `zhen.data.load_parallel`, tokenizes each translation direction on its own
(source `[src code] … </s>`, labels `[tgt code] … </s>`), trains with `DataCollatorForSeq2Seq(label_pad_token_id=-100)`
and evaluates each direction on its own eval set with `predict_with_generate` and sacreBLEU.

Two details make this right for zhen:

- **The target language is forced during evaluation.** [`ZhenSeq2SeqTrainer`] passes `forced_bos_token_id` to
  `generate` for every batch: the first label token, which is the target language code by construction. A batch
  mixing target languages is refused, which is why each direction has its own eval set (`eval_en-zh_bleu`, ...).
- **Gradient accumulation gives the full-batch gradient.** The model divides its summed loss by Trainer's
  `num_items_in_batch` (the labelled tokens of all accumulated micro-batches), and Trainer's `LabelSmoother` (from
  `label_smoothing_factor`) does the same, so `gradient_accumulation_steps=2` with half the batch is the same update.
"""

import os
from collections.abc import Sequence
from pathlib import Path

import datasets
import numpy as np
from transformers import DataCollatorForSeq2Seq, Seq2SeqTrainer, Seq2SeqTrainingArguments

from .data import load_parallel, make_directions
from .evaluation import score
from .hub import data_sources, save_for_hub, translation_generation_config
from .pipeline_zhen import max_source_tokens as model_max_source_tokens
from .translation import load_model_and_tokenizer


DEFAULT_MAX_LENGTH = 256


def directions_of(direction: str | Sequence[str]) -> list[tuple[str, str]]:
    """`"en-zh"`, `"zh-en"` or `"both"` (or a list of them) as `[(src, tgt), ...]`."""
    names = [direction] if isinstance(direction, str) else list(direction)
    if "both" in names:
        names = ["en-zh", "zh-en"]
    unknown = [name for name in names if name not in ("en-zh", "zh-en")]
    if unknown or not names:
        raise ValueError(f"Unknown direction(s) {unknown}; use 'en-zh', 'zh-en' or 'both'.")
    return [tuple(name.split("-")) for name in dict.fromkeys(names)]


def tokenize_direction(
    pairs: datasets.Dataset, tokenizer, src_lang: str, tgt_lang: str, max_length: int = DEFAULT_MAX_LENGTH
) -> datasets.Dataset:
    """
    Tokenize `pairs` (columns `en`, `zh`) for one direction: `input_ids`/`attention_mask` of the `src_lang` side and
    `labels` of the `tgt_lang` side, both truncated to `max_length` tokens (codes and `</s>` included). Special-token
    strings in the text (`"<s>"`, `"__zh__"`) are encoded as text.
    """
    examples = make_directions(pairs, f"{src_lang}-{tgt_lang}")

    def encode(batch):
        tokenizer.src_lang, tokenizer.tgt_lang = src_lang, tgt_lang
        return tokenizer(
            batch["src_text"],
            text_target=batch["tgt_text"],
            truncation=True,
            max_length=max_length,
            split_special_tokens=True,  # "<s>" or "__zh__" in a sentence is text, not a control token
        )

    return examples.map(
        encode, batched=True, remove_columns=examples.column_names, desc=f"Tokenizing {src_lang}-{tgt_lang}"
    )


def make_compute_metrics(tokenizer):
    """
    `compute_metrics` for `Seq2SeqTrainer(predict_with_generate=True)`: decodes predictions and labels and returns
    sacreBLEU `bleu` and `chrf`, scored with the tokenizer of the target language, which it reads from the first
    label token (the target language code).
    """
    code_to_lang = {tokenizer.get_lang_id(lang): lang for lang in ("en", "zh")}

    def compute_metrics(eval_prediction) -> dict[str, float]:
        predictions, labels = eval_prediction.predictions, eval_prediction.label_ids
        predictions = np.where(predictions < 0, tokenizer.pad_token_id, predictions)
        labels = np.where(labels < 0, tokenizer.pad_token_id, labels)
        languages = {code_to_lang.get(int(code)) for code in labels[:, 0]}
        if len(languages) != 1 or None in languages:
            raise ValueError("Each eval set must hold one translation direction (labels starting with one code).")
        hypotheses = tokenizer.batch_decode(predictions, skip_special_tokens=True)
        references = tokenizer.batch_decode(labels, skip_special_tokens=True)
        scores = score(hypotheses, references, languages.pop())
        return {"bleu": scores["bleu"], "chrf": scores["chrf"]}

    return compute_metrics


class ZhenSeq2SeqTrainer(Seq2SeqTrainer):
    """`Seq2SeqTrainer` that forces the target language code when it generates for evaluation: the batch's first
    label token, i.e. its target language code."""

    def prediction_step(self, model, inputs, prediction_loss_only, ignore_keys=None, **gen_kwargs):
        if self.args.predict_with_generate and not prediction_loss_only and "labels" in inputs:
            codes = inputs["labels"][:, 0].unique()
            if len(codes) != 1:
                raise ValueError(
                    "An eval batch mixes target languages; give each direction its own eval set "
                    "(eval_dataset={'en-zh': ..., 'zh-en': ...})."
                )
            gen_kwargs = {**(gen_kwargs or getattr(self, "_gen_kwargs", {})), "forced_bos_token_id": int(codes[0])}
        return super().prediction_step(model, inputs, prediction_loss_only, ignore_keys=ignore_keys, **gen_kwargs)


def finetune(
    model,
    train_files: str | os.PathLike | Sequence[str | os.PathLike],
    output_dir: str | os.PathLike,
    *,
    tokenizer=None,
    eval_files: str | os.PathLike | Sequence[str | os.PathLike] | None = None,
    direction: str | Sequence[str] = "en-zh",
    max_length: int = DEFAULT_MAX_LENGTH,
    limit: int | None = None,
    check_languages: bool = True,
    **training_args,
) -> tuple[ZhenSeq2SeqTrainer, dict]:
    """
    Fine-tune a zhen checkpoint on parallel files and save the result as a complete Hub folder.

    Args:
        model (`str`, `os.PathLike` or `ZhenForConditionalGeneration`):
            Checkpoint folder or Hub id, or a loaded model (trained in place).
        train_files: JSON Lines / TSV / Parquet files with `en` and `zh` columns (see `zhen.data.load_parallel`).
        output_dir: Where checkpoints and the final model go.
        tokenizer (*optional*): Tokenizer or its folder; defaults to the model's folder.
        eval_files (*optional*): Held-out files; each direction is evaluated on its own (BLEU, chrF, loss).
        direction (`str`, *optional*, defaults to `"en-zh"`): `"en-zh"`, `"zh-en"` or `"both"`.
        max_length (`int`, *optional*, defaults to 256):
            Longest source and target in tokens; also the generation length for evaluation. Capped at the model's
            position table.
        limit (`int`, *optional*): Use only the first `limit` training pairs (and eval pairs).
        check_languages (`bool`, *optional*, defaults to `True`):
            Stop on files whose en and zh columns look swapped (see `zhen.data.load_parallel`).
        training_args:
            Any `Seq2SeqTrainingArguments` field, e.g. `learning_rate`, `max_steps`, `num_train_epochs`,
            `per_device_train_batch_size`, `gradient_accumulation_steps`, `label_smoothing_factor`, `eval_steps`,
            `generation_num_beams`, `use_cpu`, `bf16`. Defaults: `predict_with_generate=True`, `report_to="none"`,
            `save_strategy="no"`, evaluation every `eval_steps` (or each epoch) when there are eval files.

    Returns:
        `(trainer, metrics)`: the trainer, and the final evaluation metrics (empty without eval files).
    """
    base_model = model if isinstance(model, (str, os.PathLike)) else getattr(model, "name_or_path", "")
    model, tokenizer = load_model_and_tokenizer(model, tokenizer)
    # A pinned max_new_tokens (earlier exports) would override generation_max_length at every evaluation.
    model.generation_config = translation_generation_config(model.config.to_dict(), model.generation_config)
    table = model_max_source_tokens(model.config)
    max_length = min(max_length, table) if table else max_length
    directions = directions_of(direction)
    train = _tokenized(train_files, tokenizer, directions, max_length, limit, check_languages)
    eval_sets = None
    if eval_files:
        eval_pairs = _pairs(eval_files, limit, check_languages)
        eval_sets = {f"{s}-{t}": tokenize_direction(eval_pairs, tokenizer, s, t, max_length) for s, t in directions}

    defaults = {
        "output_dir": str(output_dir),
        "predict_with_generate": True,
        "generation_max_length": max_length,
        "report_to": "none",
        "save_strategy": "no",
        "eval_strategy": ("steps" if training_args.get("eval_steps") else "epoch") if eval_sets else "no",
    }
    args = Seq2SeqTrainingArguments(**{**defaults, **training_args})
    trainer = ZhenSeq2SeqTrainer(
        model=model,
        args=args,
        train_dataset=train,
        eval_dataset=eval_sets,
        processing_class=tokenizer,
        data_collator=DataCollatorForSeq2Seq(tokenizer, model=model, label_pad_token_id=-100),
        compute_metrics=make_compute_metrics(tokenizer),
    )
    trainer.train()
    metrics = trainer.evaluate() if eval_sets else {}
    if trainer.is_world_process_zero():
        card_metrics = _card_metrics(metrics, directions, eval_files, eval_sets)
        training = _training_sections(base_model, train_files, directions, args, trainer.state.global_step)
        save_for_hub(trainer.model, tokenizer, Path(output_dir), metrics=card_metrics, extra_sections=training)
    return trainer, metrics


def _pairs(files, limit, check_languages=True):
    pairs = load_parallel(files, check_languages=check_languages)
    return pairs.select(range(min(limit, len(pairs)))) if limit else pairs


def _tokenized(files, tokenizer, directions, max_length, limit, check_languages=True) -> datasets.Dataset:
    pairs = _pairs(files, limit, check_languages)
    parts = [tokenize_direction(pairs, tokenizer, s, t, max_length) for s, t in directions]
    return parts[0] if len(parts) == 1 else datasets.concatenate_datasets(parts)


def _card_metrics(metrics: dict, directions, eval_files, eval_sets) -> dict | None:
    """The final evaluation in the form of `zhen.hub.render_model_card`, per direction."""
    if not eval_files:
        return None
    files = [eval_files] if isinstance(eval_files, (str, os.PathLike)) else list(eval_files)
    test_set = ", ".join(Path(file).name for file in files)
    card = {}
    for src, tgt in directions:
        key = f"eval_{src}-{tgt}"
        if f"{key}_bleu" in metrics:
            card[f"{src}-{tgt}"] = {
                "test_set": test_set,
                "dataset": Path(files[0]).name.split(".")[0],
                "split": "test",
                "sentences": len(eval_sets[f"{src}-{tgt}"]),
                "bleu": metrics[f"{key}_bleu"],
                "chrf": metrics[f"{key}_chrf"],
                # The signature names the settings (tokenizer, version, ...), which are the same for any text.
                "bleu_signature": score(["a"], ["a"], tgt)["bleu_signature"],
            }
    return card or None


def _training_sections(base_model, train_files, directions, args, steps: int) -> str:
    """Model-card sections on the fine-tuning data (with licences, see `zhen.hub.data_sources`) and run."""
    files = [train_files] if isinstance(train_files, (str, os.PathLike)) else list(train_files)
    names = ", ".join(f"{src}→{tgt}" for src, tgt in directions)
    base = f"`{base_model}`" if base_model else "a zhen checkpoint"
    lines = [
        "## Training data",
        "",
        *(f"- {line}" for line in data_sources([str(file) for file in files])),
        "",
        f"The base model, {base}, was trained on other data: see its model card.",
        "",
        "## Training",
        "",
        f"Fine-tuned from {base} with `zhen-finetune` (Transformers `Seq2SeqTrainer`) for {steps} steps, {names}: "
        f"batches of {args.per_device_train_batch_size} x {args.gradient_accumulation_steps} accumulation step(s), "
        f"learning rate {args.learning_rate}, label smoothing {args.label_smoothing_factor}.",
    ]
    return "\n".join(lines) + "\n"


__all__ = [
    "ZhenSeq2SeqTrainer",
    "directions_of",
    "finetune",
    "make_compute_metrics",
    "tokenize_direction",
]
