"""`zhen-finetune`: fine-tune a zhen checkpoint on parallel files with 🤗 `Seq2SeqTrainer`.

Example:

```bash
zhen-finetune --model zhen-small --train domain.train.jsonl --eval domain.valid.jsonl --direction both \\
    --output-dir zhen-small-domain --max-steps 2000 --batch-size 32 --gradient-accumulation-steps 2 \\
    --learning-rate 1e-4 --label-smoothing 0.1 --eval-steps 500 --beams 4
```

The output folder is a complete Hub repository (see `zhen-push`). Evaluation reports `eval_<direction>_bleu`,
`eval_<direction>_chrf` and `eval_<direction>_loss` per direction.
"""

import argparse
import json

from ..data import CorpusError
from ..finetuning import DEFAULT_MAX_LENGTH, finetune
from ..translation import load_model_and_tokenizer


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="zhen-finetune",
        description="Fine-tune a zhen checkpoint with Seq2SeqTrainer on parallel files (JSON Lines, TSV, Parquet) "
        "and save a complete Hub folder. Each direction is evaluated on its own with sacreBLEU.",
    )
    parser.add_argument("--model", required=True, help="Checkpoint folder (or Hub id) to start from.")
    parser.add_argument("--train", required=True, nargs="+", help="Training file(s) with en and zh columns.")
    parser.add_argument("--eval", nargs="+", help="Evaluation file(s).")
    parser.add_argument("--output-dir", required=True, help="Where the fine-tuned model goes.")
    parser.add_argument("--direction", choices=["en-zh", "zh-en", "both"], default="en-zh", help="(%(default)s)")
    training = parser.add_argument_group("training")
    training.add_argument("--max-steps", type=int, default=-1, help="Optimizer steps (overrides --epochs).")
    training.add_argument("--epochs", type=float, default=1.0, help="Epochs (%(default)s).")
    training.add_argument("--batch-size", type=int, default=16, help="Examples per device per step (%(default)s).")
    training.add_argument("--gradient-accumulation-steps", type=int, default=1, help="(%(default)s)")
    training.add_argument("--learning-rate", type=float, default=5e-5, help="(%(default)s)")
    training.add_argument("--warmup-steps", type=int, default=0, help="(%(default)s)")
    training.add_argument("--weight-decay", type=float, default=0.0, help="(%(default)s)")
    training.add_argument("--label-smoothing", type=float, default=0.0, help="label_smoothing_factor (%(default)s)")
    training.add_argument("--max-length", type=int, default=DEFAULT_MAX_LENGTH, help="Tokens per side (%(default)s).")
    training.add_argument("--eval-steps", type=int, help="Evaluate every N steps (default: each epoch).")
    training.add_argument("--logging-steps", type=int, default=50, help="(%(default)s)")
    training.add_argument("--beams", type=int, default=1, help="Beam size for evaluation (%(default)s).")
    training.add_argument("--limit", type=int, help="Use only the first N training (and eval) pairs.")
    training.add_argument("--seed", type=int, default=42, help="(%(default)s)")
    training.add_argument("--use-cpu", action="store_true", help="Train on the CPU even if a GPU is available.")
    training.add_argument("--bf16", action="store_true", help="bf16 mixed precision.")
    return parser.parse_args(argv), parser


def main(argv=None) -> None:
    args, parser = parse_args(argv)
    try:
        model, tokenizer = load_model_and_tokenizer(args.model)
    except (OSError, ValueError) as error:
        parser.error(str(error))
    try:
        _, metrics = finetune(
            model,
            args.train,
            args.output_dir,
            tokenizer=tokenizer,
            eval_files=args.eval,
            direction=args.direction,
            max_length=args.max_length,
            limit=args.limit,
            max_steps=args.max_steps,
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
    except CorpusError as error:
        parser.error(str(error))
    print(json.dumps({"output_dir": args.output_dir, **metrics}))
    print(f"Saved the fine-tuned model to {args.output_dir}")


if __name__ == "__main__":
    main()
