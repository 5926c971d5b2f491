# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""`zhen-finetune`: fine-tune a zhen checkpoint on parallel files with 🤗 `Seq2SeqTrainer`.

Example:

```bash
zhen-finetune --model zhen-small --train domain.train.jsonl --eval domain.valid.jsonl --direction both \\
    --output-dir zhen-small-domain --max-steps 2000 --batch-size 32 --gradient-accumulation-steps 2 \\
    --learning-rate 1e-4 --label-smoothing 0.1 --eval-steps 500 --beams 4
```

The output folder is a complete Hub repository (see `zhen-push`). Evaluation reports `eval_<direction>_bleu`,
`eval_<direction>_chrf` and `eval_<direction>_loss` per direction.

The model is fine-tuned into a temporary folder next to `--output-dir`, which is renamed into place when everything is
saved. The output folder may not be the `--model` folder (or lie inside it, or contain it, or contain a data file); an
existing one is replaced only with `--overwrite`, and only when it holds a zhen checkpoint and nothing else.
"""

import json

from ..finetuning import DEFAULT_MAX_LENGTH, finetune
from ..modeling_zhen import CODE_FILES
from ..safe_io import (
    TOKENIZER_FILES,
    atomic_directory,
    check_output_folder,
    check_replaceable_folder,
    is_zhen_checkpoint,
)
from ..translation import load_model_and_tokenizer
from ._cli import (
    add_language_check_argument,
    command,
    make_parser,
    non_negative_float,
    non_negative_int,
    positive_float,
    positive_int,
    probability,
)


# What a fine-tuned checkpoint folder holds, which --overwrite may replace.
ZHEN_CHECKPOINT_FILES = frozenset(
    {"config.json", "generation_config.json", "model.safetensors", "README.md", "training_args.bin",
     "eval_results.json", "all_results.json", "train_results.json", "training_config.json", "training_curve.png",
     *CODE_FILES}
) | TOKENIZER_FILES  # fmt: skip


def parse_args(argv=None):
    parser = make_parser(
        "zhen-finetune",
        "Fine-tune a zhen checkpoint with Seq2SeqTrainer on parallel files (JSON Lines, TSV, Parquet) and save a "
        "complete Hub folder. Each direction is evaluated on its own with sacreBLEU.",
    )
    parser.add_argument("--model", required=True, help="Checkpoint folder or Hub id (owner/name) to start from.")
    parser.add_argument("--train", required=True, nargs="+", help="Training file(s) with en and zh columns.")
    parser.add_argument("--eval", nargs="+", help="Evaluation file(s).")
    parser.add_argument("--output-dir", required=True, help="Where the fine-tuned model goes (a new folder).")
    parser.add_argument(
        "--overwrite", action="store_true", help="Replace --output-dir if it holds a zhen checkpoint and nothing else."
    )
    parser.add_argument("--direction", choices=["en-zh", "zh-en", "both"], default="en-zh", help="Direction(s).")
    add_language_check_argument(parser)
    training = parser.add_argument_group("training")
    training.add_argument("--max-steps", type=positive_int, help="Optimizer steps (default: --epochs decides).")
    training.add_argument("--epochs", type=positive_float, default=1.0, help="Epochs.")
    training.add_argument("--batch-size", type=positive_int, default=16, help="Examples per device per step.")
    training.add_argument("--gradient-accumulation-steps", type=positive_int, default=1, help="Batches per step.")
    training.add_argument("--learning-rate", type=positive_float, default=5e-5, help="Peak learning rate.")
    training.add_argument("--warmup-steps", type=non_negative_int, default=0, help="Linear warmup steps.")
    training.add_argument("--weight-decay", type=non_negative_float, default=0.0, help="AdamW weight decay.")
    training.add_argument("--label-smoothing", type=probability, default=0.0, help="label_smoothing_factor.")
    training.add_argument("--max-length", type=positive_int, default=DEFAULT_MAX_LENGTH, help="Tokens per side.")
    training.add_argument("--eval-steps", type=positive_int, help="Evaluate every N steps (default: each epoch).")
    training.add_argument("--logging-steps", type=positive_int, default=50, help="Log every N steps.")
    training.add_argument("--beams", type=positive_int, default=1, help="Beam size for evaluation.")
    training.add_argument("--limit", type=positive_int, help="Use only the first N training (and eval) pairs.")
    training.add_argument("--seed", type=non_negative_int, default=42, help="Random seed.")
    training.add_argument("--use-cpu", action="store_true", help="Train on the CPU even if a GPU is available.")
    training.add_argument("--bf16", action="store_true", help="bf16 mixed precision.")
    return parser.parse_args(argv)


def check_output_dir(args) -> None:
    """Refuse, before any work, an output folder that overlaps an input or holds something --overwrite may not
    replace."""
    check_output_folder(args.output_dir, [args.model, *args.train, *(args.eval or [])], flag="--output-dir")
    check_replaceable_folder(
        args.output_dir,
        args.overwrite,
        allowed=ZHEN_CHECKPOINT_FILES,
        required="config.json",
        what="a zhen checkpoint",
        flag="--overwrite",
        looks_right=is_zhen_checkpoint,
    )


@command("zhen-finetune")
def main(argv=None) -> None:
    args = parse_args(argv)
    check_output_dir(args)
    model, tokenizer = load_model_and_tokenizer(args.model)
    with atomic_directory(args.output_dir) as staging:
        _, metrics = finetune(
            model,
            args.train,
            staging,
            tokenizer=tokenizer,
            eval_files=args.eval,
            direction=args.direction,
            max_length=args.max_length,
            limit=args.limit,
            check_languages=args.check_languages,
            max_steps=args.max_steps or -1,
            num_train_epochs=args.epochs,
            per_device_train_batch_size=args.batch_size,
            per_device_eval_batch_size=args.batch_size,
            gradient_accumulation_steps=args.gradient_accumulation_steps,
            learning_rate=args.learning_rate,
            warmup_steps=args.warmup_steps,
            weight_decay=args.weight_decay,
            label_smoothing_factor=args.label_smoothing,
            eval_steps=args.eval_steps,
            logging_steps=args.logging_steps,
            generation_num_beams=args.beams,
            seed=args.seed,
            use_cpu=args.use_cpu,
            bf16=args.bf16,
        )
    print(json.dumps({"output_dir": args.output_dir, **metrics}))
    print(f"Saved the fine-tuned model to {args.output_dir}")


if __name__ == "__main__":
    main()
