# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""Train a zhen model with 🤗 Accelerate: from parallel text to an evaluated, exported checkpoint.

The same code runs as one CPU process (`python scripts/train.py`), on one GPU, on several GPUs with DDP
(`accelerate launch --multi_gpu ...`) and with FSDP through an Accelerate config. Each process trains on its own share
of every epoch's token-budget batches; metrics are reduced or gathered across processes; only the main process writes
files. Checkpoints are written atomically and hold everything a run needs to continue exactly where it stopped.
"""

import contextlib
import math
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

import datasets
import numpy as np
import torch
from accelerate import Accelerator
from accelerate.logging import get_logger
from accelerate.utils import DistributedType, gather_object, set_seed
from tqdm.auto import tqdm

from . import hardware
from .batching import Seq2SeqCollator, padding_fraction, shard_batches, token_budget_batches, weighted_epoch
from .checkpointing import (
    average_checkpoints,
    checkpoint_steps,
    load_newest_intact_checkpoint,
    replace_directory,
    save_checkpoint,
    write_json_atomic,
)
from .configuration_zhen import ZhenConfig
from .data import TrainingData, prepare_data, simplify_chinese
from .evaluation import score
from .fast_generation import forget_session_copies
from .fast_training import FastTraining, round_up
from .hub import export_checkpoint, generation_config_for, push_to_hub
from .modeling_zhen import ZhenForConditionalGeneration, shift_tokens_right
from .run_guard import OutputDirLock, check_earlier_run, ensure_writable_dir, is_main_process
from .training_config import TrainingConfig, check_resumed_config, named_files, read_recorded_config
from .translation import translate
from .visualization import plot_training_curves


logger = get_logger(__name__)

CHECKPOINT_DIR, BEST_DIR, EXPORT_DIR = "checkpoints", "best", "model"


# ---------------------------------------------------------------------------------------------------------------------
# Setup: processes and precision, output folder, model
# ---------------------------------------------------------------------------------------------------------------------


def make_accelerator(config: TrainingConfig) -> Accelerator:
    on_cpu = config.cpu or not (torch.cuda.is_available() or torch.backends.mps.is_available())
    return Accelerator(
        cpu=on_cpu,  # also what makes Accelerate set up gloo DDP for several CPU processes (torchrun, launch --cpu)
        mixed_precision=hardware.training_precision(config.mixed_precision, on_cpu),
        log_with=config.report_to or None,
        project_dir=config.output_dir,
    )


def check_output_dir(config: TrainingConfig) -> Path:
    """Fail before any work if the run cannot write its results, would overwrite an earlier run, or resumes one with
    settings it cannot change (see `zhen.run_guard` and `zhen.training_config`)."""
    output_dir = ensure_writable_dir(config.output_dir)
    if is_main_process():
        check_earlier_run(output_dir, config.resume, bool(checkpoint_steps(output_dir / CHECKPOINT_DIR)))
    recorded = read_recorded_config(output_dir) if config.resume else None
    if recorded is not None:
        check_resumed_config(config, recorded)
    config.check_files()
    return output_dir


def build_model(config: TrainingConfig, tokenizer) -> ZhenForConditionalGeneration:
    vocab_size = round_up(len(tokenizer), 8)  # a multiple of 8 suits matrix kernels; the extra rows are never targets
    if config.init_from:
        model = ZhenForConditionalGeneration.from_pretrained(
            config.init_from, attn_implementation=config.attn_implementation
        )
        if model.config.vocab_size < len(tokenizer):
            raise ValueError(
                f"{config.init_from} has vocab_size={model.config.vocab_size} but the tokenizer has {len(tokenizer)}"
                " tokens; train with the checkpoint's own tokenizer (--tokenizer)."
            )
    else:
        overrides = dict(config.model_overrides)
        if config.dropout is not None:
            overrides["dropout"] = config.dropout
        model_config = ZhenConfig.from_preset(
            config.preset,
            vocab_size=vocab_size,
            pad_token_id=tokenizer.pad_token_id,
            eos_token_id=tokenizer.eos_token_id,
            bos_token_id=tokenizer.bos_token_id,
            decoder_start_token_id=tokenizer.bos_token_id,
            **overrides,
        )
        model_config._attn_implementation = config.attn_implementation
        model = ZhenForConditionalGeneration(model_config)
    model.config.label_smoothing = config.label_smoothing
    model.generation_config = generation_config_for(model.config, config.export_num_beams)
    if config.gradient_checkpointing:
        model.activation_checkpointing_enable()
    return model


# ---------------------------------------------------------------------------------------------------------------------
# Optimisation
# ---------------------------------------------------------------------------------------------------------------------


def make_scheduler(
    optimizer, config: TrainingConfig, total_steps: int, elapsed_seconds=lambda: 0.0
) -> torch.optim.lr_scheduler.LambdaLR:
    """The learning rate of each optimizer step: a linear warmup from 0, then the inverse square root of the
    Transformer paper, a cosine or linear decay to `min_lr_ratio` of the peak at the end of training, or constant.

    Training ends at `total_steps` or at the end of the `max_minutes` budget, whichever comes first: its progress is
    the larger of the share of steps done and the share of the budget spent (`elapsed_seconds()` of training steps).
    So a run given only minutes anneals over its minutes, whatever the machine's speed. The warmup is `warmup_steps`,
    or with `warmup_ratio` that share of the progress; after a warmup in steps the inverse square root is in steps
    (`sqrt(warmup_steps / step)`, as Transformers' schedule), after one in progress it is in progress."""
    budget = 60 * config.max_minutes if config.max_minutes else math.inf
    ratio, warmup = config.warmup_ratio, max(config.warmup_steps, 0)

    def progress(step: int, start: int = 0) -> float:
        """Share of the training from step `start` on that is done, by steps or by time, whichever is further."""
        return min(max((step - start) / max(total_steps - start, 1), elapsed_seconds() / budget), 1.0)

    def factor(step: int) -> float:
        if ratio is not None:  # warmup, decay and the inverse square root all in progress
            done = progress(step)
            warmed = since_peak = done / ratio if ratio else 1.0
            after = (done - ratio) / (1 - ratio)
        else:
            warmed = step / warmup if warmup else 1.0
            since_peak = (step + max(warmup, 1) - warmup) / max(warmup, 1)
            after = progress(step, warmup)
        if warmed < 1.0:
            return warmed
        if config.lr_scheduler == "inverse_sqrt":
            return 1.0 / math.sqrt(since_peak)
        if config.lr_scheduler == "constant":
            return 1.0
        decay = DECAYS[config.lr_scheduler](min(max(after, 0.0), 1.0))
        return config.min_lr_ratio + (1 - config.min_lr_ratio) * decay

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def final_step(step: int, total_steps: int, seconds: float, budget: float) -> int:
    """The step training ends at: `total_steps`, or sooner where the time budget (`budget` seconds of training steps)
    runs out first at the rate of the `step` steps done in `seconds`. The progress bar's total, so that the time it
    shows left is the budget's, not that of the steps a budgeted run never takes."""
    if budget == math.inf or step <= 0 or seconds <= 0:
        return total_steps
    return min(total_steps, step + round(max(budget - seconds, 0.0) * step / seconds))


DECAYS = {"cosine": lambda progress: 0.5 * (1 + math.cos(math.pi * progress)), "linear": lambda progress: 1 - progress}


def make_optimizer(model, config: TrainingConfig) -> torch.optim.Optimizer:
    decay, no_decay = [], []
    for name, parameter in model.named_parameters():
        if parameter.requires_grad:
            (no_decay if parameter.ndim < 2 or "embed" in name else decay).append(parameter)
    groups = [{"params": decay, "weight_decay": config.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(
        groups,
        lr=config.learning_rate,
        betas=(config.adam_beta1, config.adam_beta2),
        eps=config.adam_epsilon,
        fused=True,
    )


# ---------------------------------------------------------------------------------------------------------------------
# The training loop
# ---------------------------------------------------------------------------------------------------------------------


@dataclass
class TrainerState:
    """What, beside the Accelerate state, a checkpoint stores to continue exactly."""

    step: int = 0
    epoch: int = 0
    batches_done_in_epoch: int = 0
    target_tokens_seen: int = 0
    train_seconds: float = 0.0
    best_metric: float | None = None
    best_step: int | None = None
    evals_without_gain: int = 0
    history: list[dict] = field(default_factory=list)


@dataclass
class TrainingWindow:
    """Loss, target tokens (all processes) and seconds of the optimizer steps since the last log line. Only the steps
    themselves are timed, so evaluation and checkpointing do not dilute the throughput."""

    loss: float | torch.Tensor = 0.0  # summed where the losses are (on a GPU: no wait for the GPU until the log line)
    tokens: int = 0
    seconds: float = 0.0
    steps: int = 0

    def add(self, loss: float | torch.Tensor, tokens: int, seconds: float) -> None:
        self.loss = self.loss + loss
        self.tokens += tokens
        self.seconds += seconds
        self.steps += 1


def wait_for_the_step_before(launched: torch.cuda.Event | None, device: torch.device) -> torch.cuda.Event | None:
    """On a GPU, wait until the step before the one just launched has run, and mark the end of the one just launched:
    the host then collates the next batch while the GPU runs this step, and is never more than one step ahead (the
    step times add up to the wall time). Elsewhere work is done when launched: nothing to wait for."""
    if device.type != "cuda":
        return None
    done = torch.cuda.Event()
    done.record()
    if launched is not None:
        launched.synchronize()
    return done


class ZhenTrainer:
    """Token-budget training with gradient accumulation, periodic evaluation, checkpoints and export."""

    def __init__(self, config, accelerator, model, tokenizer, data: TrainingData, output_dir: Path):
        self.config, self.accelerator, self.tokenizer, self.data = config, accelerator, tokenizer, data
        self.output_dir = output_dir
        self.collate = Seq2SeqCollator(tokenizer.pad_token_id)
        self.source_lengths = np.asarray(data.train["src_len"])
        self.target_lengths = np.asarray(data.train["tgt_len"])
        if len(self.source_lengths) == 0:
            raise ValueError("No training examples are left after cleaning and length filtering; check the data.")
        self.state = TrainerState()
        self.corpus = np.asarray(data.train["corpus"]) if "corpus" in data.train.column_names else None
        self.steps_per_epoch = math.ceil(len(self.epoch_batches(0)) / config.gradient_accumulation_steps)
        self.total_steps = config.max_steps or math.ceil(config.num_epochs * self.steps_per_epoch)
        # Switched on before `prepare`, which may wrap the model's modules (FSDP).
        one_process = accelerator.num_processes == 1
        self.fast = FastTraining(
            model,
            mixed_precision=accelerator.mixed_precision,
            device=accelerator.device,
            cuda_graphs=None if config.cuda_graphs and one_process else False,
        )
        optimizer = make_optimizer(model, config)
        self.since_log = TrainingWindow()
        self.scheduler = make_scheduler(optimizer, config, self.total_steps, self.elapsed_seconds)
        # The scheduler is stepped here once per optimizer step, not by Accelerate (which would step it once per
        # process), and checkpointed with the rest.
        self.model, self.optimizer = accelerator.prepare(model, optimizer)
        accelerator.register_for_checkpointing(self.scheduler)

    # --- data order

    def epoch_batches(self, epoch: int) -> list[list[int]]:
        config, examples = self.config, None
        if config.train_weights and self.corpus is not None:
            examples = weighted_epoch(self.corpus, config.corpus_weights(), config.seed, epoch)
        pick = slice(None) if examples is None else examples
        batches = token_budget_batches(
            self.source_lengths[pick], self.target_lengths[pick], config.max_tokens, config.seed, epoch
        )
        if examples is not None:
            batches = [examples[batch].tolist() for batch in batches]
        return shard_batches(batches, self.accelerator.process_index, self.accelerator.num_processes)

    def describe_epoch_mix(self) -> str:
        """What an epoch holds of each training corpus, e.g. `tatoeba 4x (225,688 examples), news 1x (51,276)`."""
        if self.corpus is None or not self.config.train_files:
            return ""
        counts = np.bincount(self.corpus, minlength=len(self.config.train_files))
        names, weights = named_files(self.config.train_files, "train"), self.config.corpus_weights()
        parts = [f"{name} {w:g}x ({round(w * n):,} examples)" for name, w, n in zip(names, weights, counts)]
        return "An epoch holds " + ", ".join(parts)

    def elapsed_seconds(self) -> float:
        """Seconds of training steps so far, over resumes."""
        return self.state.train_seconds + self.since_log.seconds

    def windows(self):
        """Yield the micro-batches of each optimizer step, epoch after epoch, from where the state says."""
        accumulation = self.config.gradient_accumulation_steps
        while True:
            batches = self.epoch_batches(self.state.epoch)
            for start in range(self.state.batches_done_in_epoch, len(batches), accumulation):
                yield batches[start : start + accumulation]
            self.state.epoch += 1
            self.state.batches_done_in_epoch = 0

    # --- one step

    def train_step(self, window: list[list[int]]) -> tuple[torch.Tensor, int]:
        """Forward/backward over the window's micro-batches and one optimizer step. The loss of each micro-batch is
        its summed token loss over the target tokens of the whole window on all processes (times the process count,
        since DDP averages gradients), so the update is the exact per-token mean of the window."""
        accelerator, model = self.accelerator, self.model
        batches = [self.collate(self.data.train[indices]) for indices in window]
        global_tokens = sum(int(batch["labels"].ne(-100).sum()) for batch in batches)
        if accelerator.num_processes > 1:
            global_tokens = int(accelerator.reduce(torch.tensor(global_tokens, device=accelerator.device), "sum"))
        num_items = torch.tensor(global_tokens / accelerator.num_processes, device=accelerator.device)
        loss_sum = torch.zeros((), device=accelerator.device)
        for i, batch in enumerate(batches):
            last = i == len(batches) - 1
            if self.fast.graphs is not None:  # one process: nothing to synchronise
                loss = self.fast.graphs(model, batch, num_items_in_batch=num_items)
            else:
                with contextlib.nullcontext() if last else accelerator.no_sync(model):
                    with accelerator.autocast():  # the fused loss runs after the forward, under the same precision
                        loss = self.fast.loss(model, batch, num_items_in_batch=num_items)
                    accelerator.backward(loss)
            loss_sum += loss.detach()
        if self.config.max_grad_norm > 0:
            accelerator.clip_grad_norm_(model.parameters(), self.config.max_grad_norm)
        self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=self.fast.graphs is None)  # CUDA graphs add to the same gradients
        self.state.batches_done_in_epoch += len(window)
        return loss_sum, global_tokens

    # --- evaluation

    @torch.no_grad()
    def validation_loss(self, examples: datasets.Dataset) -> float:
        """Token-level cross-entropy (no label smoothing) over a tokenized validation set, shared out over processes."""
        accelerator, model = self.accelerator, self.model
        batches = token_budget_batches(examples["src_len"], examples["tgt_len"], self.config.max_tokens, 0, 0, False)
        rank, world = accelerator.process_index, accelerator.num_processes
        totals = torch.zeros(2, device=accelerator.device, dtype=torch.float64)
        for i, indices in enumerate(shard_batches(batches, rank, world)):
            batch = {k: v.to(accelerator.device) for k, v in self.collate(examples[indices]).items()}
            labels = batch.pop("labels")
            decoder_input_ids = shift_tokens_right(labels, self.tokenizer.pad_token_id, self.tokenizer.bos_token_id)
            logits = model(**batch, decoder_input_ids=decoder_input_ids).logits
            if rank + i * world < len(batches):  # later batches only repeat earlier ones to keep processes in step
                totals[0] += torch.nn.functional.cross_entropy(
                    logits.float().flatten(0, 1), labels.flatten(), ignore_index=-100, reduction="sum"
                ).double()
                totals[1] += labels.ne(-100).sum()
        totals = accelerator.reduce(totals, "sum")
        return float(totals[0] / totals[1].clamp(min=1))

    def bleu_subset(self, pairs: datasets.Dataset) -> datasets.Dataset:
        size = min(self.config.eval_bleu_samples, len(pairs))
        return pairs.shuffle(seed=self.config.seed).select(range(size)) if size < len(pairs) else pairs

    @torch.no_grad()
    def translate_and_score(self, pairs: datasets.Dataset, src: str, tgt: str) -> dict:
        """Translate a share of `pairs` on each process, gather on all, score (sacreBLEU) with the `zh` tokenizer
        for Chinese targets."""
        accelerator = self.accelerator
        sources, references = list(pairs[src]), list(pairs[tgt])
        if tgt == "zh" and self.config.simplify_chinese:
            references = [simplify_chinese(text) for text in references]
        share = sources[accelerator.process_index :: accelerator.num_processes]
        share += sources[: -(-len(sources) // accelerator.num_processes) - len(share)]  # equal work for FSDP lockstep
        model = accelerator.unwrap_model(self.model)
        synced = accelerator.distributed_type == DistributedType.FSDP
        with accelerator.autocast(), self.fast.paused():  # the fast decoder's session copies need plain modules
            hypotheses = translate(
                share,
                model=model,
                tokenizer=self.tokenizer,
                src_lang=src,
                tgt_lang=tgt,
                num_beams=self.config.eval_num_beams,
                **({"synced_gpus": True} if synced else {}),
            )
        gathered = gather_object([hypotheses])
        ordered = [None] * len(sources)
        for rank, part in enumerate(gathered):
            for i, hypothesis in zip(range(rank, len(sources), accelerator.num_processes), part):
                ordered[i] = hypothesis
        return score(ordered, references, tgt_lang=tgt)

    def evaluate(self) -> dict:
        """Validation loss per set, BLEU and chrF per set and direction, and their mean BLEU (the selection metric)."""
        self.model.eval()
        result = {"step": self.state.step}
        with torch.random.fork_rng(devices=[]):  # evaluation must not shift the training RNG (exact resume)
            for name, examples in self.data.valid.items():
                if len(examples):
                    result[f"{name}/loss"] = self.validation_loss(examples)
            bleus = []
            if self.config.eval_bleu_samples > 0:
                for name, pairs in self.data.valid_pairs.items():
                    subset = self.bleu_subset(pairs)
                    for direction in self.directions:
                        src, tgt = direction.split("-")
                        scores = self.translate_and_score(subset, src, tgt)
                        for metric in ("bleu", "chrf", "sentences"):
                            result[f"{name}/{direction}/{metric}"] = scores[metric]
                        result[f"{name}/{direction}/signature"] = scores["bleu_signature"]
                        bleus.append(scores["bleu"])
        losses = [v for k, v in result.items() if k.endswith("/loss")]
        result["loss"] = float(np.mean(losses)) if losses else float("nan")
        result["bleu"] = float(np.mean(bleus)) if bleus else None
        forget_session_copies(self.accelerator.unwrap_model(self.model))  # stale at the next step: only memory
        self.model.train()
        return result

    @property
    def directions(self) -> list[str]:
        return ["en-zh", "zh-en"] if self.config.directions == "both" else [self.config.directions]

    # --- bookkeeping

    def selection_metric(self, result: dict) -> float:
        return result["bleu"] if result["bleu"] is not None else -result["loss"]

    def record_evaluation(self, result: dict) -> bool:
        """Keep the best model by BLEU; returns whether early stopping says stop."""
        state, metric = self.state, self.selection_metric(result)
        result["type"] = "eval"
        state.history.append(result)
        self.accelerator.log({f"eval/{k}": v for k, v in result.items() if isinstance(v, float)}, step=state.step)
        if state.best_metric is None or metric > state.best_metric:
            state.best_metric, state.best_step, state.evals_without_gain = metric, state.step, 0
            self.export(self.output_dir / BEST_DIR, self.accelerator.get_state_dict(self.model), result)
        else:
            state.evals_without_gain += 1
        patience = self.config.early_stopping_patience
        return patience is not None and state.evals_without_gain >= patience

    def save(self):
        checkpoints = self.output_dir / CHECKPOINT_DIR
        keep = max(self.config.save_total_limit, self.config.average_last, 1)
        save_checkpoint(self.accelerator, checkpoints, self.state.step, self.state.__dict__, keep)

    def resume(self):
        found = load_newest_intact_checkpoint(self.accelerator, self.output_dir / CHECKPOINT_DIR, TrainerState)
        if found is None:
            logger.info("No checkpoint to resume from; starting afresh.")
            return
        checkpoint, self.state = found
        logger.info(f"Resumed from {checkpoint} (step {self.state.step}, epoch {self.state.epoch})")

    def log_training(self, progress) -> None:
        state, window = self.state, self.since_log
        entry = {
            "type": "train",
            "step": state.step,
            "loss": float(window.loss) / window.steps,
            "lr": self.scheduler.get_last_lr()[0],
            "target_tokens_per_second": window.tokens / window.seconds,
            "epoch": state.epoch,
        }
        state.train_seconds += window.seconds
        self.since_log = TrainingWindow()
        state.history.append(entry)
        self.accelerator.log({f"train/{k}": v for k, v in entry.items() if k != "type"}, step=state.step)
        progress.set_postfix(
            loss=f"{entry['loss']:.3f}", lr=f"{entry['lr']:.2e}", tok_s=f"{entry['target_tokens_per_second']:.0f}"
        )

    # --- main loop

    def fit(self) -> dict:
        config, accelerator, state = self.config, self.accelerator, self.state
        if config.resume:
            self.resume()
            state = self.state
        self.model.train()
        budget = 60 * config.max_minutes if config.max_minutes else float("inf")
        progress = tqdm(
            total=self.total_steps, initial=state.step, desc="Training", disable=not accelerator.is_local_main_process
        )
        last_eval = None
        windows = self.windows()
        launched = None  # on a GPU, the end of the step last launched: the host prepares the next one meanwhile
        stop = state.step >= self.total_steps
        if stop:  # resumed a finished run: nothing to train, export what it found best
            last_eval = next((h for h in reversed(state.history) if h.get("type") == "eval"), None) or self.evaluate()
        while not stop:
            started = time.monotonic()
            loss_sum, tokens = self.train_step(next(windows))
            if accelerator.num_processes > 1:
                loss_sum = accelerator.reduce(loss_sum, "mean")
            launched = wait_for_the_step_before(launched, accelerator.device)
            self.since_log.add(loss_sum.detach(), tokens, time.monotonic() - started)
            state.step += 1
            state.target_tokens_seen += tokens
            progress.total = final_step(state.step, self.total_steps, self.elapsed_seconds(), budget)
            progress.update(1)
            stop = state.step >= self.total_steps or self.elapsed_seconds() >= budget
            if state.step % config.logging_steps == 0 or stop:
                self.log_training(progress)
            if state.step % config.eval_steps == 0 or stop:
                last_eval = self.evaluate()
                stop = self.record_evaluation(last_eval) or stop
                if accelerator.is_main_process:
                    progress.write(format_evaluation(last_eval))
            if state.step % config.save_steps == 0 or stop:
                self.save()
        progress.close()
        return last_eval

    # --- export

    def export(self, folder: Path, state_dict, metrics: dict) -> None:
        """A complete Hub repository of the model as it is (see `zhen.hub.export_checkpoint`), by the main process."""
        if self.accelerator.is_main_process:
            export_checkpoint(
                folder,
                self.accelerator.unwrap_model(self.model),
                self.tokenizer,
                run_config=self.config,
                metrics=metrics,
                data_summary=self.data.summary,
                state_dict=state_dict,
                repo_id=self.config.push_to_hub,
            )

    def finish(self, final_eval: dict) -> Path:
        """Export the best model (or the average of the last checkpoints, when that scores better) to `model/`."""
        accelerator, output_dir = self.accelerator, self.output_dir
        best_eval = next(
            (h for h in reversed(self.state.history) if h.get("type") == "eval" and h["step"] == self.state.best_step),
            final_eval,
        )
        chosen, chosen_eval = output_dir / BEST_DIR, best_eval
        if self.config.average_last > 1:
            averaged_eval = self.evaluate_average()
            if averaged_eval and self.selection_metric(averaged_eval) > self.selection_metric(best_eval):
                chosen, chosen_eval = output_dir / "averaged", averaged_eval
        if accelerator.is_main_process:
            plot_training_curves(self.state.history, output_dir / "training_curve.png")
            export = output_dir / EXPORT_DIR
            tmp = export.with_name(f".{EXPORT_DIR}.tmp")
            shutil.rmtree(tmp, ignore_errors=True)
            shutil.copytree(chosen, tmp)
            shutil.copy(output_dir / "training_curve.png", tmp / "training_curve.png")
            replace_directory(tmp, export)
            write_json_atomic(output_dir / "history.json", self.state.history)
            logger.info(f"Exported {chosen.name} model (step {chosen_eval['step']}) to {export}")
        accelerator.wait_for_everyone()
        return output_dir / EXPORT_DIR

    def evaluate_average(self) -> dict | None:
        """Average the last `average_last` checkpoints, evaluate the average, export it to `averaged/`."""
        checkpoints = list(checkpoint_steps(self.output_dir / CHECKPOINT_DIR).values())[-self.config.average_last :]
        if len(checkpoints) < 2:
            return None
        model = self.accelerator.unwrap_model(self.model)
        current = {k: v.detach().clone() for k, v in model.state_dict().items()}
        averaged = average_checkpoints(checkpoints)
        model.load_state_dict(averaged, strict=False)
        result = self.evaluate()
        result["averaged_checkpoints"] = [path.name for path in checkpoints]
        self.export(self.output_dir / "averaged", model.state_dict(), result)
        model.load_state_dict(current)
        self.state.history.append({**result, "type": "eval-averaged"})
        return result


def format_evaluation(result: dict) -> str:
    parts = [f"step {result['step']}", f"valid loss {result['loss']:.3f}"]
    parts += [f"{k.removesuffix('/bleu')} BLEU {v:.1f}" for k, v in result.items() if k.endswith("/bleu")]
    return " | ".join(parts)


# ---------------------------------------------------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------------------------------------------------


def train(config: TrainingConfig) -> Path:
    """Run a whole training: data → tokenizer → model → training → evaluation → export. Returns the export folder.
    The output folder is locked for the whole run (on the main process): a second run into it is refused."""
    with OutputDirLock(config.output_dir) if is_main_process() else contextlib.nullcontext():
        return _train(config)


def _train(config: TrainingConfig) -> Path:
    output_dir = check_output_dir(config)
    accelerator = make_accelerator(config)
    set_seed(config.seed)
    data, tokenizer = prepare_data(config, accelerator, output_dir)
    set_seed(config.seed)
    model = build_model(config, tokenizer)
    trainer = ZhenTrainer(config, accelerator, model, tokenizer, data, output_dir)
    if accelerator.is_main_process:
        config.save(output_dir / "training_config.json")
        logger.info(describe_run(trainer, accelerator))
    if config.report_to:
        accelerator.init_trackers("zhen", config={k: str(v) for k, v in config.to_dict().items()})
    final_eval = trainer.fit()
    export = trainer.finish(final_eval)
    if config.push_to_hub and accelerator.is_main_process:
        push_to_hub(export, config.push_to_hub, private=config.hub_private)
    accelerator.end_training()
    return export


def describe_run(trainer: ZhenTrainer, accelerator: Accelerator) -> str:
    model, data = accelerator.unwrap_model(trainer.model), trainer.data
    batches = trainer.epoch_batches(0)
    lines = [
        f"Training data: {data.summary.get('train_source')}",
        data.summary.get("cleaning", ""),
        f"{data.summary.get('train_examples', len(data.train)):,} training examples ({trainer.config.directions}); "
        f"{data.summary.get('dropped_too_many_tokens', 0):,} dropped for exceeding the token limits",
        f"Validation sets: {data.summary.get('valid_sets')}",
        f"Model: {model.num_parameters():,} parameters, {model.config.position_embedding_type} positions, "
        f"{'pre' if model.config.normalize_before else 'post'}-norm, vocab {model.config.vocab_size}",
        trainer.describe_epoch_mix(),
        f"{len(batches)} batches per epoch and process (max_tokens={trainer.config.max_tokens}), padding "
        f"{padding_fraction(batches, trainer.source_lengths, trainer.target_lengths):.1%}; {trainer.total_steps} steps",
        f"Device {accelerator.device}, {accelerator.num_processes} process(es), "
        f"mixed precision {accelerator.mixed_precision} ({hardware.current().describe()})",
        f"Training path: {trainer.fast.describe()}",
    ]
    return "\n".join(line for line in lines if line)
