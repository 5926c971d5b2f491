"""Equal-compute peer benchmark (issue 20): zhen against `MarianMTModel` of the same size, trained one after the other
on the same data, with the same zhen tokenizer and the same training-time budget on this machine, then scored on the
same sentences with the same decoding and sacreBLEU settings at the same training minutes.

Stages (each training and each evaluation in a fresh process; only training steps count against a budget):

1. Data and tokenizer, here: zhen's loading and cleaning (`zhen.data.load_run_pairs`/`clean_training_pairs`), one
   zhen tokenizer trained on the cleaned training pairs exactly as zhen-train trains it (or `--tokenizer`), saved in
   the output folder; `--eval-sentences` pairs drawn once from each validation set.
2. zhen: `zhen-train` (`zhen.commands.train.main`, i.e. `train(resolve_config(argv))`) from the recipe
   (`--zhen-config`), first for `--probe-minutes` to measure its step rate, then for `--minutes` (`--max-minutes`),
   saving a checkpoint every `--eval-every-minutes` worth of steps. zhen-train counts only its optimizer steps against
   `--max-minutes` and records `train_seconds` and `target_tokens_seen` in every checkpoint. No BLEU during training.
3. Marian: a `MarianMTModel` of zhen's shape and token ids trained with `Seq2SeqTrainer` on zhen's own tokenized
   examples (its cache: `[src code] … </s>` → `[tgt code] … </s>`, same length filter; with the recipe's
   `train_weights`, the same mix of corpora as zhen's epochs), `DataCollatorForSeq2Seq
   (label_pad_token_id=-100)`, length-grouped batches of as many sentences as zhen's batches hold on average, fused
   AdamW (0.9, 0.98), clipping 1.0, label smoothing 0.1, bf16 where zhen trains in bf16. Its own recipe: a probe
   measures its step rate, warmup is `--marian-warmup-ratio` of the steps it will take, and the learning rate decays
   linearly to zero at the end of the budget in training time (`--marian-schedule`); `--marian-lr 5e-4,1e-3,2e-3`
   first sweeps on `--sweep-minutes` and keeps the lowest validation loss. A `TrainerCallback` counts training-step
   time only (not logging or saving), saves the weights at zhen's checkpoint minutes and stops at the budget.
4. Evaluation afterwards: every checkpoint of both systems translates the same sentences of each validation set in
   both directions with `zhen.translate` (target code forced, greedy unless `--num-beams`, the same output-length
   budget), scored by `zhen.evaluation.score` (sacreBLEU, `zh` tokenizer into Chinese, `13a` into English, chrF),
   plus validation loss (token cross-entropy, no smoothing).
5. Report: tables per system and checkpoint, zhen − Marian, machine, commands; `report-beamN.md`,
   `results-beamN.json` and `bleu_curves-beamN.png` (BLEU against minutes and against target tokens) in the output
   folder (N = `--num-beams`, so that a greedy and a beam scoring of the same runs sit side by side).

    python benchmarks/bench_quality.py --smoke                           # wiring check: tiny models, ~1.5 minutes
    python benchmarks/bench_quality.py --minutes 30 --threads 2          # the issue-20 comparison (~2 h in all)
    python benchmarks/bench_quality.py --minutes 30 --marian-lr 5e-4,1e-3,2e-3 --sweep-minutes 10
    python benchmarks/bench_quality.py --zhen-config my_recipe.yaml --systems zhen --output-dir runs/bq-recipe
    python benchmarks/bench_quality.py --skip-training --num-beams 4 --output-dir runs/bq-...   # re-score, re-report
"""

import argparse
import json
import math
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import torch
from torch.optim.lr_scheduler import LambdaLR
from transformers import PrinterCallback, Seq2SeqTrainer, TrainerCallback
from transformers.trainer_pt_utils import LengthGroupedSampler


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import cpu_description, marian_config_like, marian_differences, print_table  # noqa: E402


REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"
RECIPES = REPO / "zhen" / "recipes"
SAMPLE = REPO / "zhen" / "sample_data"
# README "What an hour on a 2-core CPU buys", without the flags this script sets itself (budget, evaluation, saving).
README_HOUR_RECIPE = ["--preset", "small", "--directions", "both", "--vocab-size", "16000", "--max-tokens", "3072",
                      "--learning-rate", "1e-3", "--warmup-steps", "1000", "--label-smoothing", "0.1"]  # fmt: skip
SMOKE = dict(minutes=0.3, probe_minutes=0.05, threads=1, eval_every_minutes=0.15, eval_sentences=16, preset="tiny",
             vocab_size=2000, zhen_args="--max-tokens 1024 --num-epochs 1000", marian_warmup_ratio="0.1")  # fmt: skip
SYSTEMS = ("zhen", "marian")


# ---------------------------------------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=ArgumentDefaultsRawHelpFormatter)
    p.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    p.add_argument("--minutes", type=float, default=30.0, help="training budget per system (training steps only)")
    p.add_argument("--systems", default="zhen,marian", help="which to train, in this order")
    p.add_argument("--threads", type=int, default=os.cpu_count(), help="torch threads of every stage")
    p.add_argument("--zhen-config", help="zhen-train YAML recipe (default: the shipped CPU recipe whose budget is "
                   "nearest --minutes, else README's hour recipe as flags)")  # fmt: skip
    p.add_argument("--zhen-args", default="", help="more zhen-train flags, e.g. '--max-tokens 1536'")
    p.add_argument("--preset", help="size of both models (default: the recipe's, else small)")
    p.add_argument("--vocab-size", type=int, help="tokenizer vocabulary (default: the recipe's, else 16000)")
    p.add_argument("--tokenizer", help="an existing zhen tokenizer folder instead of training one")
    p.add_argument("--train-files", nargs="+", default=default_data("train"))
    p.add_argument("--valid-files", nargs="+", default=default_data("valid"), help="name=path each")
    p.add_argument("--eval-every-minutes", type=float, default=5.0, help="checkpoint spacing (curve resolution)")
    p.add_argument("--eval-sentences", type=int, default=500, help="per validation set and direction")
    p.add_argument("--num-beams", type=int, default=1, help="decoding of the evaluation (1 = greedy)")
    p.add_argument("--probe-minutes", type=float, default=1.0, help="step-rate probe of each system")
    p.add_argument("--output-dir", help="default: runs/bench-quality-<date-time>")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--marian-lr", default="1e-3", help="peak learning rate; a comma list sweeps")
    p.add_argument("--marian-warmup-ratio", default="0.1", help="warmup share of its steps; a comma list sweeps")
    p.add_argument("--marian-schedule", default="linear", choices=["linear", "inverse_sqrt", "constant"],
                   help="after warmup: linear decay to 0 at the end of the budget (training time), inverse square "
                   "root of the step, or constant")  # fmt: skip
    p.add_argument("--marian-batch-size", type=int, help="sentences per step (default: zhen's mean batch)")
    p.add_argument("--sweep-minutes", type=float, help="budget of each sweep run (default: a third of --minutes)")
    p.add_argument("--skip-training", action="store_true", help="evaluate and report the runs in --output-dir")
    p.add_argument("--smoke", action="store_true", help=f"tiny wiring check on the sample corpus: {SMOKE}")
    return p


class ArgumentDefaultsRawHelpFormatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    pass


def default_data(split: str) -> list[str]:
    if split == "train":
        return [str(SHARED_DATA / name / "train.jsonl.gz") for name in ("tatoeba", "news")]
    return [f"{name}={SHARED_DATA / name / 'valid.jsonl.gz'}" for name in ("tatoeba", "news")]


def parse_args(argv=None) -> argparse.Namespace:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.smoke:  # smoke values replace the defaults, not what was given explicitly
        parser.set_defaults(**SMOKE, train_files=[str(SAMPLE / "train.jsonl")])
        if not SHARED_DATA.is_dir():
            parser.set_defaults(valid_files=[f"sample={SAMPLE / 'valid.jsonl'}"])
        args = parser.parse_args(argv)
    args.output_dir = Path(args.output_dir or f"runs/bench-quality{'-smoke' if args.smoke else ''}-"
                           f"{time.strftime('%Y%m%d-%H%M%S')}")  # fmt: skip
    args.systems = [s for s in args.systems.split(",") if s]
    if set(args.systems) - set(SYSTEMS):
        parser.error(f"--systems: choose from {SYSTEMS}")
    args.zhen_config = args.zhen_config or shipped_recipe(args.minutes)
    return args


def shipped_recipe(minutes: float) -> str | None:
    """The recipe shipped in zhen/recipes/ for this budget: of those named for the CPU (else all), the one whose
    `max_minutes` is nearest `minutes` (`small-cpu` for 30 minutes, `small-cpu-2h` for 120)."""
    import yaml

    recipes = sorted(RECIPES.glob("*.y*ml")) if RECIPES.is_dir() else []
    candidates = [r for r in recipes if "cpu" in r.name.lower()] or recipes
    if not candidates:
        return None
    budget = {r: (yaml.safe_load(r.read_text()) or {}).get("max_minutes") or math.inf for r in candidates}
    return str(min(candidates, key=lambda r: abs(budget[r] - minutes)))


def zhen_base_argv(args) -> list[str]:
    """The zhen-train flags both systems' data, tokenizer and shape come from (without budget, saving, output)."""
    argv = ["--config", args.zhen_config] if args.zhen_config else list(README_HOUR_RECIPE)
    argv += ["--train-files", *args.train_files, "--valid-files", *args.valid_files, "--seed", str(args.seed)]
    if args.preset:
        argv += ["--preset", args.preset]
    if args.vocab_size:
        argv += ["--vocab-size", str(args.vocab_size)]
    return argv + shlex.split(args.zhen_args)


# ---------------------------------------------------------------------------------------------------------------------
# Stage 1: tokenizer and evaluation sentences (this process)
# ---------------------------------------------------------------------------------------------------------------------


def prepare(args, setup: dict) -> None:
    """Train (or take) the shared tokenizer and draw the evaluation sentences; record both in `setup`."""
    from zhen.commands.train import resolve_config
    from zhen.data import clean_training_pairs, drop_empty, load_run_pairs
    from zhen.tokenizer_training import train_tokenizer

    cfg = resolve_config(setup["zhen_argv"])
    train_pairs, valid_pairs, _ = load_run_pairs(cfg)
    if args.tokenizer:
        setup["tokenizer"] = str(Path(args.tokenizer).resolve())
    else:
        train_pairs, _ = clean_training_pairs(cfg, train_pairs)
        started = time.perf_counter()
        tokenizer = train_tokenizer(train_pairs, vocab_size=cfg.vocab_size, min_frequency=cfg.tokenizer_min_frequency)
        tokenizer.save_pretrained(args.output_dir / "tokenizer")
        setup["tokenizer"] = str((args.output_dir / "tokenizer").resolve())
        setup["tokenizer_note"] = (f"trained here on {len(train_pairs):,} cleaned pairs, {len(tokenizer):,} tokens, "
                                   f"{time.perf_counter() - started:.0f} s")  # fmt: skip
    eval_sets = {}
    for name, pairs in valid_pairs.items():
        pairs = drop_empty(pairs).shuffle(seed=args.seed)
        pairs = pairs.select(range(min(args.eval_sentences, len(pairs))))
        eval_sets[name] = {"en": list(pairs["en"]), "zh": list(pairs["zh"])}
    write_json(args.output_dir / "eval_sets.json", eval_sets)
    setup["eval_sets"] = {name: len(pairs["en"]) for name, pairs in eval_sets.items()}


# ---------------------------------------------------------------------------------------------------------------------
# Stage 2: zhen (zhen-train in a subprocess: a probe, then the budget run)
# ---------------------------------------------------------------------------------------------------------------------


def zhen_run_argv(setup: dict, out: Path, minutes: float, save_steps: int, logging_steps: int) -> list[str]:
    return setup["zhen_argv"] + [
        "--tokenizer", setup["tokenizer"], "--output-dir", str(out), "--max-minutes", f"{minutes:g}",
        "--save-steps", str(save_steps), "--save-total-limit", "100000", "--logging-steps", str(logging_steps),
        "--eval-steps", "1000000000", "--eval-bleu-samples", "0", "--average-last", "0",
    ]  # fmt: skip


def train_zhen(args, setup: dict) -> dict:
    """Probe zhen's step rate, then train for the budget with a checkpoint every `--eval-every-minutes` of steps."""
    probe_dir, run_dir = args.output_dir / "zhen-probe", args.output_dir / "zhen"
    probe_argv = zhen_run_argv(setup, probe_dir, args.probe_minutes, 10**9, 10)
    run_child("zhen", {"argv": probe_argv, "threads": args.threads}, args.output_dir / "zhen-probe.log")
    probe = checkpoint_marks(probe_dir)[-1]
    rate = probe["step"] / probe["seconds"]
    save_steps = max(1, round(rate * args.eval_every_minutes * 60))
    logging_steps = 5 if save_steps >= 10 else save_steps  # a divisor: train_seconds is exact at every save
    save_steps = -(-save_steps // logging_steps) * logging_steps
    (run_dir / "cache").mkdir(parents=True, exist_ok=True)
    for cache in (probe_dir / "cache").glob("*"):  # the tokenized data, reused (same key) instead of rebuilt
        shutil.move(str(cache), str(run_dir / "cache" / cache.name))
    for folder in ("checkpoints", "best", "model"):
        shutil.rmtree(probe_dir / folder, ignore_errors=True)
    argv = zhen_run_argv(setup, run_dir, args.minutes, save_steps, logging_steps)
    run_child("zhen", {"argv": argv, "threads": args.threads}, args.output_dir / "zhen.log")
    run = dict(system="zhen", argv=argv, command="zhen-train " + shlex.join(argv),
               probe=dict(steps=probe["step"], seconds=probe["seconds"], steps_per_second=rate),
               save_steps=save_steps, marks=checkpoint_marks(run_dir))  # fmt: skip
    history = json.loads((run_dir / "history.json").read_text())
    run["final_eval"] = next((h for h in reversed(history) if h.get("type") == "eval"), None)
    summary = next(run_dir.glob("cache/*/summary.json"), None)
    run["data"] = json.loads(summary.read_text()) if summary else None
    write_json(run_dir / "run.json", run)
    return run


def checkpoint_marks(run_dir: Path) -> list[dict]:
    """Step, training seconds and target tokens of each zhen-train checkpoint (from its trainer_state.json)."""
    from zhen.checkpointing import checkpoint_steps, read_state

    marks = []
    for step, path in checkpoint_steps(run_dir / "checkpoints").items():
        state = read_state(path)
        marks.append(dict(step=step, seconds=state["train_seconds"], target_tokens=state["target_tokens_seen"],
                          path=str(path)))  # fmt: skip
    return marks


def zhen_worker(job: dict) -> None:
    """`zhen-train ARGV`, as the command runs it (logging included), with the benchmark's thread count."""
    torch.set_num_threads(job["threads"])
    from zhen.commands.train import main

    main(job["argv"])


# ---------------------------------------------------------------------------------------------------------------------
# Stage 3: Marian (Seq2SeqTrainer in a subprocess: a probe, an optional sweep, then the budget run)
# ---------------------------------------------------------------------------------------------------------------------


def train_marian(args, setup: dict, zhen_run: dict | None) -> dict:
    budget = args.minutes * 60
    if zhen_run:  # zhen's checkpoint times (but its last, at the budget), to score both at the same minutes
        marks = [m["seconds"] for m in zhen_run["marks"][:-1]]
    else:
        marks = [k * args.eval_every_minutes * 60 for k in range(1, math.ceil(args.minutes / args.eval_every_minutes))]
    sweep_seconds = 60 * (args.sweep_minutes or args.minutes / 3)
    job = dict(setup=setup, out=str(args.output_dir / "marian"), threads=args.threads, seed=args.seed, budget=budget,
               marks=marks, probe_seconds=args.probe_minutes * 60, lrs=floats(args.marian_lr),
               warmup_ratios=floats(args.marian_warmup_ratio), schedule=args.marian_schedule,
               batch_size=args.marian_batch_size, sweep_seconds=sweep_seconds)  # fmt: skip
    run_child("marian", job, args.output_dir / "marian.log")
    return json.loads((args.output_dir / "marian" / "run.json").read_text())


def floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x]


def marian_worker(job: dict) -> None:
    torch.set_num_threads(job["threads"])
    quiet_libraries()
    from transformers import AutoTokenizer

    from zhen.commands.train import resolve_config
    from zhen.hardware import training_precision
    from zhen.training import build_model

    cfg = resolve_config(job["setup"]["zhen_argv"])
    tokenizer = AutoTokenizer.from_pretrained(job["setup"]["tokenizer"])
    out = Path(job["out"])
    train, data_source = zhen_training_examples(cfg, tokenizer, out.parent / "zhen")
    if cfg.train_weights:  # the same mix of corpora as zhen's epochs (its first epoch's draw of any fractions)
        from zhen.batching import weighted_epoch

        train = train.select(weighted_epoch(train["corpus"], cfg.corpus_weights(), cfg.seed, 0))
        data_source += f", corpus weights {cfg.train_weights}"
    valid = tokenized_eval_sets(cfg, tokenizer, out.parent / "eval_sets.json")
    zhen_config = build_model(cfg, tokenizer).config
    config = marian_config_like(zhen_config)
    on_cpu = cfg.cpu or not torch.cuda.is_available()
    recipe = dict(batch_size=job["batch_size"] or mean_batch_sentences(cfg, train), schedule=job["schedule"],
                  bf16=training_precision(cfg.mixed_precision, on_cpu) == "bf16", use_cpu=on_cpu,
                  seed=job["seed"], label_smoothing=0.1, adam_betas=(0.9, 0.98), adam_epsilon=1e-8,
                  weight_decay=0.0, max_grad_norm=1.0, optimizer="adamw_torch_fused",
                  batches="length-grouped: LengthGroupedSampler over max(source, target) tokens")  # fmt: skip
    log(f"Marian: {len(train):,} examples ({data_source}), {recipe['batch_size']} sentences per step")

    quiet = dict(lr=job["lrs"][0], warmup_steps=10**9, schedule="constant")  # speed only: a tiny rate, no divergence
    probe = fit_marian(config, tokenizer, train, recipe, quiet, job["probe_seconds"], out / "probe")
    # Steps of fixed sentence counts vary with sentence length (the first, length-grouped, are the longest), so the
    # steps it will take are the probe's target tokens/s over the mean target tokens of a step.
    tokens_per_step = recipe["batch_size"] * mean(train["tgt_len"])
    rate = probe["target_tokens_per_second"] / tokens_per_step
    log(
        f"Marian probe: {probe['target_tokens_per_second']:.0f} target tokens/s, {probe['steps_per_second']:.3f} "
        f"steps/s; {rate * job['budget']:.0f} steps of {tokens_per_step:.0f} target tokens expected in the budget"
    )
    sweep = []
    settings = [(lr, ratio) for lr in job["lrs"] for ratio in job["warmup_ratios"]]
    if len(settings) > 1:
        for lr, ratio in settings:
            schedule = schedule_for(recipe, lr, ratio, rate * job["sweep_seconds"])
            sweep_dir = out / f"sweep-lr{lr:g}-warmup{ratio:g}"
            result = fit_marian(
                config, tokenizer, train, recipe, schedule, job["sweep_seconds"], sweep_dir, valid=valid
            )
            sweep.append(dict(lr=lr, warmup_ratio=ratio, valid_loss=result["valid_loss"], steps=result["steps"]))
            log(f"Marian sweep: lr {lr:g}, warmup {ratio:g}: valid loss {result['valid_loss']:.3f}")
        best = min(sweep, key=lambda r: r["valid_loss"])
        settings = [(best["lr"], best["warmup_ratio"])]
    lr, ratio = settings[0]
    schedule = schedule_for(recipe, lr, ratio, rate * job["budget"])
    result = fit_marian(config, tokenizer, train, recipe, schedule, job["budget"], out, job["marks"], valid)
    run = dict(system="marian", recipe={**recipe, **schedule, "warmup_ratio": ratio, "expected_steps":
               round(rate * job["budget"])}, probe=probe, sweep=sweep, marks=result["marks"],
               final_valid_loss=result["valid_loss"], log_history=result["log_history"], train_examples=len(train),
               data_source=data_source, config=config.to_diff_dict(),
               differences_from_zhen=marian_differences(zhen_config))  # fmt: skip
    write_json(out / "run.json", run)


def zhen_training_examples(cfg, tokenizer, zhen_dir: Path):
    """The tokenized examples zhen trained on: zhen-train's own cache when zhen ran in this output folder, else built
    by the same zhen functions (cleaning, both directions, Simplified targets, `tokenize_batch`, length filter)."""
    import datasets

    from zhen.data import clean_training_pairs, load_run_pairs, to_examples, tokenize_examples

    caches = sorted(zhen_dir.glob("cache/*/train"))
    if len(caches) == 1:
        return datasets.load_from_disk(str(caches[0])), f"zhen-train's cache {caches[0].parent.name}"
    train_pairs = clean_training_pairs(cfg, load_run_pairs(cfg)[0])[0]
    return tokenize_examples(cfg, to_examples(cfg, train_pairs), tokenizer)[0], "zhen.training functions"


def tokenized_eval_sets(cfg, tokenizer, path: Path) -> dict:
    """The evaluation sentences of each set, tokenized as training examples (both directions), for validation loss."""
    import datasets

    from zhen.data import to_examples, tokenize_examples

    sets = json.loads(path.read_text())
    return {
        name: tokenize_examples(cfg, to_examples(cfg, datasets.Dataset.from_dict(pairs)), tokenizer)[0]
        for name, pairs in sets.items()
    }


def mean_batch_sentences(cfg, train) -> int:
    """Sentences per optimizer step in zhen's token-budget batches (mean over an epoch, accumulation included)."""
    from zhen.batching import token_budget_batches

    batches = token_budget_batches(train["src_len"], train["tgt_len"], cfg.max_tokens, cfg.seed, 0)
    return max(1, round(len(train) / len(batches) * cfg.gradient_accumulation_steps))


def schedule_for(recipe: dict, lr: float, warmup_ratio: float, expected_steps: float) -> dict:
    return dict(lr=lr, warmup_steps=max(1, round(warmup_ratio * expected_steps)), schedule=recipe["schedule"])


def marian_model(config, seed: int):
    from transformers import MarianMTModel

    torch.manual_seed(seed)
    return MarianMTModel(config)


def fit_marian(config, tokenizer, train, recipe: dict, schedule: dict, seconds: float, out: Path,
               marks: list[float] | None = None, valid: dict | None = None) -> dict:  # fmt: skip
    """Train a fresh Marian for `seconds` of training steps; with `marks` (seconds), save its weights there and at the
    end; with `valid` sets, return their mean validation loss."""
    from transformers import DataCollatorForSeq2Seq, Seq2SeqTrainingArguments

    model = marian_model(config, recipe["seed"])
    log(f"Marian: {model.num_parameters():,} parameters, lr {schedule['lr']:g}, warmup {schedule['warmup_steps']} "
        f"steps, {schedule['schedule']}, {seconds / 60:.2f} training minutes -> {out}")  # fmt: skip
    clock = TrainingClock(seconds, marks)  # saves only if given marks (a list, maybe empty)
    arguments = Seq2SeqTrainingArguments(
        output_dir=str(out), per_device_train_batch_size=recipe["batch_size"], learning_rate=schedule["lr"],
        max_steps=10**7, weight_decay=recipe["weight_decay"], adam_beta1=recipe["adam_betas"][0],
        adam_beta2=recipe["adam_betas"][1], adam_epsilon=recipe["adam_epsilon"], max_grad_norm=recipe["max_grad_norm"],
        optim=recipe["optimizer"], label_smoothing_factor=recipe["label_smoothing"], bf16=recipe["bf16"],
        use_cpu=recipe["use_cpu"], seed=recipe["seed"], eval_strategy="no", save_strategy="no",
        save_only_model=True, logging_steps=25, report_to="none", disable_tqdm=True, dataloader_num_workers=0,
    )  # fmt: skip
    trainer = BudgetedSeq2SeqTrainer(
        model=model, args=arguments, train_dataset=train, processing_class=tokenizer,
        data_collator=DataCollatorForSeq2Seq(tokenizer, model=model, label_pad_token_id=-100), callbacks=[clock],
        lengths=[max(s, t) for s, t in zip(train["src_len"], train["tgt_len"])], schedule=schedule, clock=clock,
    )  # fmt: skip
    clock.trainer = trainer
    trainer.remove_callback(PrinterCallback)  # the clock logs instead, with training minutes
    trainer.train()
    step_seconds = clock.step_seconds[2:] or clock.step_seconds  # the first steps allocate: left out of the rates
    step_tokens = clock.step_tokens[2:] or clock.step_tokens
    result = dict(steps=trainer.state.global_step, seconds=clock.seconds, target_tokens=trainer.target_tokens,
                  steps_per_second=len(step_seconds) / max(sum(step_seconds), 1e-9),
                  target_tokens_per_second=sum(step_tokens) / max(sum(step_seconds), 1e-9), marks=clock.saved,
                  log_history=trainer.state.log_history)  # fmt: skip
    if valid:
        result["valid_loss"] = mean(validation_loss(model.eval(), examples, tokenizer) for examples in valid.values())
    return result


class TrainingClock(TrainerCallback):
    """Counts the seconds of training steps (fetching and collating the batch, forward, backward, optimizer) and
    nothing else: the clock restarts after each log, evaluation and save. Stops training at the budget; given `marks`
    (seconds), saves the weights when it passes one and at the budget."""

    def __init__(self, budget: float, marks: list[float] | None = None):
        self.budget, self.marks, self.save = budget, sorted(m for m in marks or [] if m < budget), marks is not None
        self.seconds, self.step_seconds, self.step_tokens, self.saved, self.trainer = 0.0, [], [], [], None
        self._since = self._tokens = None

    def _restart(self, args, state, control, **kwargs):
        self._since = time.perf_counter()

    on_train_begin = on_save = on_evaluate = _restart

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and "loss" in logs:
            log(f"Marian step {state.global_step}, {self.seconds / 60:.1f} min: loss {logs['loss']:.3f}, "
                f"lr {logs.get('learning_rate', 0):.2e}")  # fmt: skip
        self._restart(args, state, control)

    def on_step_end(self, args, state, control, **kwargs):
        now = time.perf_counter()
        self.step_seconds.append(now - self._since)
        self.step_tokens.append(self.trainer.target_tokens - (self._tokens or 0))
        self._tokens = self.trainer.target_tokens
        self.seconds += now - self._since
        self._since = now
        passed = [m for m in self.marks if m <= self.seconds]
        control.should_training_stop = self.seconds >= self.budget
        if self.save and (control.should_training_stop or passed):
            self.marks = [m for m in self.marks if m > self.seconds]
            control.should_save = True
            path = Path(args.output_dir) / f"checkpoint-{state.global_step}"
            self.saved.append(dict(step=state.global_step, seconds=self.seconds,
                                   target_tokens=self.trainer.target_tokens, path=str(path)))  # fmt: skip
        return control


class BudgetedSeq2SeqTrainer(Seq2SeqTrainer):
    """`Seq2SeqTrainer` with length-grouped batches over given lengths, a count of target tokens, and a learning-rate
    schedule that may follow the training time spent (`TrainingClock`)."""

    def __init__(self, *args, lengths, schedule: dict, clock: TrainingClock, **kwargs):
        super().__init__(*args, **kwargs)
        self.lengths, self.schedule, self.clock, self.target_tokens = lengths, schedule, clock, 0

    def _get_train_sampler(self, train_dataset=None):
        return LengthGroupedSampler(
            self.args.train_batch_size * self.args.gradient_accumulation_steps, lengths=self.lengths
        )

    def training_step(self, model, inputs, num_items_in_batch=None):
        self.target_tokens += int(inputs["labels"].ne(-100).sum())
        return super().training_step(model, inputs, num_items_in_batch)

    def create_scheduler(self, num_training_steps, optimizer=None):
        if self.lr_scheduler is None:
            self.lr_scheduler = LambdaLR(optimizer or self.optimizer, self.lr_factor)
        return self.lr_scheduler

    def lr_factor(self, step: int) -> float:
        """Linear warmup from 0 over `warmup_steps`, then: `linear`, a linear decay to 0 at the end of the budget in
        training time; `inverse_sqrt`, sqrt(warmup / step); `constant`."""
        warmup, kind = self.schedule["warmup_steps"], self.schedule["schedule"]
        if step < warmup:
            return step / warmup
        if kind == "inverse_sqrt":
            return math.sqrt(warmup / max(step, 1))
        if kind == "linear":
            return max(0.0, 1.0 - self.clock.seconds / self.clock.budget)
        return 1.0


# ---------------------------------------------------------------------------------------------------------------------
# Stage 4: evaluation of every checkpoint (a subprocess per system)
# ---------------------------------------------------------------------------------------------------------------------


def evaluate_system(args, setup: dict, system: str) -> dict:
    job = dict(setup=setup, system=system, run=str(args.output_dir / system / "run.json"), threads=args.threads,
               num_beams=args.num_beams, eval_sets=str(args.output_dir / "eval_sets.json"),
               out=str(args.output_dir / system / f"eval-beam{args.num_beams}.json"))  # fmt: skip
    run_child("evaluate", job, args.output_dir / f"{system}-eval-beam{args.num_beams}.log")
    return json.loads(Path(job["out"]).read_text())


def evaluate_worker(job: dict) -> None:
    torch.set_num_threads(job["threads"])
    quiet_libraries()
    from transformers import AutoTokenizer

    from zhen.commands.train import resolve_config

    cfg = resolve_config(job["setup"]["zhen_argv"])
    tokenizer = AutoTokenizer.from_pretrained(job["setup"]["tokenizer"])
    sets = json.loads(Path(job["eval_sets"]).read_text())
    valid = tokenized_eval_sets(cfg, tokenizer, Path(job["eval_sets"]))
    run = json.loads(Path(job["run"]).read_text())
    points = []
    for mark in run["marks"]:
        started = time.perf_counter()
        model = load_checkpoint(job["system"], mark["path"], cfg, tokenizer, job["num_beams"])
        point = dict(step=mark["step"], minutes=mark["seconds"] / 60, target_tokens=mark["target_tokens"])
        for name, pairs in sets.items():
            point[f"{name}/loss"] = validation_loss(model, valid[name], tokenizer)
            for src, tgt in directions(cfg):
                scores, samples = translate_and_score(model, tokenizer, pairs, src, tgt, job["num_beams"], cfg)
                for key in ("bleu", "chrf", "bleu_signature", "length_ratio"):
                    point[f"{name}/{src}-{tgt}/{key}"] = scores[key]
                point[f"{name}/{src}-{tgt}/samples"] = samples
        point["eval_seconds"] = time.perf_counter() - started
        points.append(point)
        log(f"{job['system']} step {point['step']} ({point['minutes']:.1f} min): " + ", ".join(
            f"{k.removesuffix('/bleu')} {v:.1f}" for k, v in point.items() if k.endswith("/bleu")))  # fmt: skip
        write_json(Path(job["out"]), dict(system=job["system"], num_beams=job["num_beams"], points=points))


def directions(cfg) -> list[tuple[str, str]]:
    return [("en", "zh"), ("zh", "en")] if cfg.directions == "both" else [tuple(cfg.directions.split("-"))]


def load_checkpoint(system: str, path: str, cfg, tokenizer, num_beams: int):
    """A checkpoint in float32, with zhen's generation settings (output budget, ids) for both systems."""
    from zhen.hub import generation_config_for
    from zhen.training import build_model

    if system == "zhen":  # zhen-train's checkpoints hold Accelerate state: weights without config
        from safetensors.torch import load_file

        model = build_model(cfg, tokenizer)
        tensors = model.state_dict(keep_vars=True)
        weights = load_file(str(Path(path) / "model.safetensors"))
        missing, unexpected = model.load_state_dict(weights, strict=False)
        loaded = {tensors[name].data_ptr() for name in weights if name in tensors}
        untied = [name for name in missing if tensors[name].data_ptr() not in loaded]  # tied copies are not saved
        if unexpected or untied:
            raise RuntimeError(f"{path}: unexpected weights {unexpected}, missing {untied}")
    else:
        from transformers import MarianMTModel

        model = MarianMTModel.from_pretrained(path, dtype=torch.float32)
    model.generation_config = generation_config_for(model.config, num_beams)
    return model.float().eval()


def translate_and_score(model, tokenizer, pairs: dict, src: str, tgt: str, num_beams: int, cfg):
    """zhen.translate (target code forced) and zhen.evaluation.score; Chinese references in Simplified script when
    zhen trains on Simplified targets, as zhen-train scores them."""
    from zhen import data as zdata
    from zhen.evaluation import score
    from zhen.translation import translate

    hypotheses = translate(pairs[src], model, tokenizer, src_lang=src, tgt_lang=tgt, num_beams=num_beams)
    references = pairs[tgt]
    if tgt == "zh" and cfg.simplify_chinese:
        references = [zdata.simplify_chinese(text) for text in references]
    samples = [dict(source=s, hypothesis=h, reference=r) for s, h, r in zip(pairs[src], hypotheses, references)][:3]
    return score(hypotheses, references, tgt_lang=tgt), samples


@torch.no_grad()
def validation_loss(model, examples, tokenizer, max_tokens: int = 4096) -> float:
    """Token cross-entropy (no label smoothing) over tokenized examples, in zhen's length-sorted batches."""
    from zhen.batching import Seq2SeqCollator, token_budget_batches

    collate, total, count = Seq2SeqCollator(tokenizer.pad_token_id), 0.0, 0
    for indices in token_budget_batches(examples["src_len"], examples["tgt_len"], max_tokens, 0, 0, shuffle=False):
        batch = collate(examples[indices])
        labels = batch.pop("labels")
        decoder_input_ids = model.prepare_decoder_input_ids_from_labels(labels=labels)
        logits = model(**batch, decoder_input_ids=decoder_input_ids).logits.float()
        total += float(torch.nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten(), reduction="sum"))
        count += int(labels.ne(-100).sum())
    return total / max(count, 1)


# ---------------------------------------------------------------------------------------------------------------------
# Stage 5: report
# ---------------------------------------------------------------------------------------------------------------------


def machine(threads: int) -> dict:
    import transformers

    from zhen import hardware

    info = cpu_description()
    info.update(threads=threads, torch=torch.__version__, transformers=transformers.__version__,
                zhen_hardware=hardware.current().describe(), load1=round(os.getloadavg()[0], 2))  # fmt: skip
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name()
    return info


def describe_machine(info: dict) -> str:
    flags = ", ".join(f"{flag} {'yes' if on else 'no'}" for flag, on in info["flags"].items())
    return (f"{info['cpu']} ({info['cpus']} CPUs; {flags}), {info['threads']} thread(s), torch {info['torch']}, "
            f"transformers {info['transformers']}; zhen: {info['zhen_hardware']}"
            + (f"; GPU {info['gpu']}" if info.get("gpu") else ""))  # fmt: skip


def report(args, setup: dict, runs: dict, evals: dict, machine_end: dict) -> dict:
    """Print the markdown report and write it (report-beamN.md), results-beamN.json and bleu_curves-beamN.png."""
    lines = []
    emit = lines.append
    names = list(setup["eval_sets"])
    pairs = [f"{name}/{d}" for name in names for d in ("en-zh", "zh-en")]
    decoding = "greedy" if args.num_beams == 1 else f"beam {args.num_beams}"
    emit(f"# Equal-compute peer benchmark: zhen vs MarianMTModel, {args.minutes:g} training minutes each\n")
    emit(f"Machine: {describe_machine(setup['machine'])}. Load average {setup['machine']['load1']} at the start, "
         f"{machine_end['load1']} at the end. Started {setup['started']}.\n")  # fmt: skip
    if setup["machine"]["load1"] > 0.5:  # (at the end it includes this benchmark's own evaluation)
        emit("**The machine was not quiet** (load average above 0.5 before the benchmark started): step rates, and "
             "so the BLEU reached in the budget, may not be comparable with a run on a quiet machine.\n")  # fmt: skip
    emit(f"Tokenizer: {setup['tokenizer']} ({setup.get('tokenizer_note', 'given')}). Evaluation: {decoding}, "
         f"{', '.join(f'{n} {k}' for n, k in setup['eval_sets'].items())} sentences per direction, "
         f"sacreBLEU via zhen.evaluation.score ({signature(evals)}).\n")  # fmt: skip
    emit("## Commands\n")
    emit(f"- benchmark: `{setup['command']}`")
    if args.skip_training:
        emit(f"- scored again with: `{command_line()}`")
    for system, run in runs.items():
        emit(f"- {system}: " + describe_run(run))
        if run["marks"] and run["marks"][-1]["seconds"] < 0.97 * args.minutes * 60:
            emit(f"  - **{system} stopped before the budget** (a step or epoch limit of its recipe)")
    rows = []
    for system, result in evals.items():
        for point in result["points"]:
            row = dict(system=system, minutes=point["minutes"], step=point["step"],
                       tokens=point["target_tokens"] / 1e6,
                       loss=mean(point[f"{n}/loss"] for n in names))  # fmt: skip
            for pair in pairs:
                row[pair] = point.get(f"{pair}/bleu")
                row[pair + " chrF"] = point.get(f"{pair}/chrf")
            rows.append(row)
    emit("\n## BLEU at each checkpoint\n")
    columns = [("system", "system", "s"), ("minutes", "minutes", ".2f"), ("step", "steps", "d"),
               ("tokens", "target tokens (M)", ".2f"), ("loss", "valid loss", ".3f")]  # fmt: skip
    columns += [(p, p.replace("/", " ").replace("-", "→"), ".1f") for p in pairs]
    columns += [(p + " chrF", "chrF " + p.replace("/", " ").replace("-", "→"), ".1f") for p in pairs]
    emit(table(rows, columns))
    differences = compare(evals, pairs)
    if differences:
        emit("\n## zhen − Marian (BLEU, at the same checkpoint minutes)\n")
        diff_columns = [("minutes", "minutes (zhen / Marian)", "s")] + [(p, columns_label(p), "+.1f") for p in pairs]
        emit(table(differences, diff_columns))
        final = differences[-1]
        verdict = all(final[p] >= 2 for p in pairs if p.startswith(names[0] + "/"))
        emit(f"\nAt the end of the budget, zhen − Marian on {names[0]}: "
             + ", ".join(f"{columns_label(p)} {final[p]:+.1f}" for p in pairs if p.startswith(names[0] + "/"))
             + f" → the issue's ≥ 2 BLEU margin in both directions is {'met' if verdict else 'NOT met'}.")  # fmt: skip
    emit("\n## Final translations (first 3 sentences of each set and direction)\n")
    for system, result in evals.items():
        last = result["points"][-1]
        for pair in pairs:
            for sample in last.get(f"{pair}/samples", [])[:3]:
                source, hypothesis, reference = sample["source"], sample["hypothesis"], sample["reference"]
                emit(f"- {system} {pair}: {source!r} → {hypothesis[:300]!r} (reference {reference!r})")
    text = "\n".join(lines)
    print("\n" + text, flush=True)
    results = dict(benchmark="bench_quality", args={k: str(v) for k, v in vars(args).items()}, setup=setup,
                   machine_end=machine_end, runs=runs, evaluations=evals, zhen_minus_marian=differences)  # fmt: skip
    suffix = f"-beam{args.num_beams}"
    write_json(args.output_dir / f"results{suffix}.json", results)
    (args.output_dir / f"report{suffix}.md").write_text(text + "\n", encoding="utf-8")
    threads = f"{args.threads} thread{'s' if args.threads > 1 else ''}"
    plot(
        evals, names, args.output_dir / f"bleu_curves{suffix}.png", f"{setup['machine']['cpu']}, {threads}, {decoding}"
    )
    print(f"\nWritten: {args.output_dir}/report{suffix}.md, results{suffix}.json, bleu_curves{suffix}.png", flush=True)
    final = {system: {k: v for k, v in result["points"][-1].items() if k.endswith(("/bleu", "/chrf", "/loss"))
                      or k in ("minutes", "step", "target_tokens")} for system, result in evals.items()}  # fmt: skip
    print(json.dumps(dict(benchmark="bench_quality", minutes=args.minutes, num_beams=args.num_beams,
                          machine=setup["machine"], final=final, zhen_minus_marian=differences)))  # fmt: skip
    return results


def describe_run(run: dict) -> str:
    marks = run["marks"]
    last = marks[-1] if marks else dict(step=0, seconds=0.0, target_tokens=0)
    speed = (f"{last['step']:,} steps, {last['target_tokens'] / 1e6:.2f} M target tokens in "
             f"{last['seconds'] / 60:.1f} training minutes "
             f"({last['target_tokens'] / max(last['seconds'], 1e-9):,.0f} target tokens/s)")  # fmt: skip
    if run["system"] == "zhen":
        loss = (run.get("final_eval") or {}).get("loss", float("nan"))
        return (f"`{run['command']}` (probe: {run['probe']['steps_per_second']:.3f} steps/s, so a checkpoint every "
                f"{run['save_steps']} steps); {speed}; zhen-train's final validation loss {loss:.3f}")  # fmt: skip
    r = run["recipe"]
    sweep = "; sweep: " + ", ".join(f"lr {s['lr']:g} warmup {s['warmup_ratio']:g} → valid loss {s['valid_loss']:.3f}"
                                    for s in run["sweep"]) if run["sweep"] else ""  # fmt: skip
    return (f"MarianMTModel ({', '.join(run['differences_from_zhen']) or 'same architecture as zhen'}), "
            f"Seq2SeqTrainer: lr {r['lr']:g}, warmup {r['warmup_steps']} steps ({r['warmup_ratio']:g} of the "
            f"{r['expected_steps']} expected from the probe's {run['probe']['target_tokens_per_second']:.0f} target "
            f"tokens/s; "
            f"{r['warmup_steps'] / max(last['step'], 1):.2f} of the {last['step']} taken), then {r['schedule']}, "
            f"{r['batch_size']} sentences per step ({r['batches']}), AdamW {r['adam_betas']} eps "
            f"{r['adam_epsilon']:g}, clip {r['max_grad_norm']}, label smoothing {r['label_smoothing']}, "
            f"{'bf16' if r['bf16'] else 'float32'}, {run['train_examples']:,} examples ({run['data_source']}){sweep};"
            f" {speed}")  # fmt: skip


def compare(evals: dict, pairs: list[str]) -> list[dict]:
    """zhen − Marian at each zhen checkpoint and the Marian checkpoint nearest in training minutes (Marian saves at
    zhen's checkpoint minutes, so they differ by at most one step)."""
    if not {"zhen", "marian"} <= set(evals) or not evals["marian"]["points"]:
        return []
    out = []
    for z in evals["zhen"]["points"]:
        m = min(evals["marian"]["points"], key=lambda point: abs(point["minutes"] - z["minutes"]))
        row = dict(minutes=f"{z['minutes']:.2f} / {m['minutes']:.2f}")
        row.update({p: z[f"{p}/bleu"] - m[f"{p}/bleu"] for p in pairs})
        out.append(row)
    return out


def columns_label(pair: str) -> str:
    return pair.replace("/", " ").replace("-", "→")


def signature(evals: dict) -> str:
    for result in evals.values():
        for key, value in result["points"][0].items():
            if key.endswith("/bleu_signature"):
                return value
    return "no scores"


def table(rows: list[dict], columns) -> str:
    import contextlib
    import io

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        print_table(rows, columns)
    return buffer.getvalue().rstrip()


def plot(evals: dict, names: list[str], path: Path, subtitle: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors, styles = {"zhen": "tab:blue", "marian": "tab:orange"}, {"en-zh": "-", "zh-en": "--"}
    fig, axes = plt.subplots(2, len(names), figsize=(6 * len(names), 8), squeeze=False)
    for col, name in enumerate(names):
        for row, (key, label, scale) in enumerate([("minutes", "training minutes", 1),
                                                   ("target_tokens", "target tokens (M)", 1e6)]):  # fmt: skip
            ax = axes[row][col]
            for system, result in evals.items():
                points = result["points"]
                for direction, style in styles.items():
                    if f"{name}/{direction}/bleu" in points[0]:
                        ax.plot([p[key] / scale for p in points], [p[f"{name}/{direction}/bleu"] for p in points],
                                style, marker="o", color=colors[system], label=f"{system} {direction}")  # fmt: skip
            ax.set(title=f"{name} validation", xlabel=label, ylabel="BLEU")
            ax.set_ylim(bottom=0)
            ax.grid(alpha=0.3)
            ax.legend()
    fig.suptitle(f"zhen vs MarianMTModel at equal training time ({subtitle})")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# ---------------------------------------------------------------------------------------------------------------------
# Helpers and entry point
# ---------------------------------------------------------------------------------------------------------------------


def run_child(kind: str, job: dict, log_path: Path) -> None:
    """Run `this script --worker KIND JOB.json` in a fresh interpreter with the benchmark's thread count, its output
    shown and kept in `log_path`."""
    job_path = log_path.with_suffix(".job.json")
    write_json(job_path, job)
    env = {**os.environ, "OMP_NUM_THREADS": str(job["threads"]), "MKL_NUM_THREADS": str(job["threads"]),
           "TOKENIZERS_PARALLELISM": "false"}  # fmt: skip
    command = [sys.executable, os.path.abspath(__file__), "--worker", kind, str(job_path)]
    log(f"{kind}: {shlex.join(command)} (log: {log_path})")
    with open(log_path, "wb") as sink:
        child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
        for chunk in iter(lambda: child.stdout.read1(65536), b""):
            sys.stdout.buffer.write(chunk)
            sys.stdout.flush()
            sink.write(chunk)
    if child.wait():
        raise RuntimeError(f"{kind} failed (exit {child.returncode}); see {log_path}")


def quiet_libraries() -> None:
    import datasets
    from transformers.utils import logging as hf_logging

    datasets.disable_progress_bars()
    hf_logging.set_verbosity_warning()


def write_json(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False, default=str) + "\n", encoding="utf-8")


def mean(values) -> float:
    values = list(values)
    return sum(values) / len(values) if values else float("nan")


def command_line(argv=None) -> str:
    return "python benchmarks/bench_quality.py " + shlex.join(sys.argv[1:] if argv is None else argv)


def log(message: str) -> None:
    print(f"[bench_quality {time.strftime('%H:%M:%S')}] {message}", flush=True)


WORKERS = {"zhen": zhen_worker, "marian": marian_worker, "evaluate": evaluate_worker}


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.worker:
        return WORKERS[args.worker[0]](json.loads(Path(args.worker[1]).read_text()))
    import zhen  # noqa: F401  (registers the zhen tokenizer with AutoTokenizer)

    quiet_libraries()

    setup_path = args.output_dir / "setup.json"
    if args.skip_training:
        if not setup_path.exists():
            raise FileNotFoundError(f"{setup_path} not found: --skip-training needs the --output-dir of a run")
        setup = json.loads(setup_path.read_text())
    else:
        if setup_path.exists():
            raise FileExistsError(f"{args.output_dir} holds an earlier run: --skip-training, or another --output-dir")
        args.output_dir.mkdir(parents=True, exist_ok=True)
        setup = dict(command=command_line(argv),
                     zhen_argv=zhen_base_argv(args), machine=machine(args.threads),
                     started=time.strftime("%Y-%m-%d %H:%M:%S %Z"))  # fmt: skip
        log(f"output: {args.output_dir}; machine: {describe_machine(setup['machine'])}")
        prepare(args, setup)
        write_json(setup_path, setup)
        zhen_run = train_zhen(args, setup) if "zhen" in args.systems else None
        if "marian" in args.systems:
            train_marian(args, setup, zhen_run)
    runs = {s: json.loads((args.output_dir / s / "run.json").read_text()) for s in args.systems
            if (args.output_dir / s / "run.json").exists()}  # fmt: skip
    evals = {system: evaluate_system(args, setup, system) for system in runs}
    report(args, setup, runs, evals, machine(args.threads))


if __name__ == "__main__":
    main()
