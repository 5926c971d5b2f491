# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""What GPU training's first steps cost: the steps of zhen-train's first epoch in its order (token-budget batches of
the corpora, both directions, their real lengths; random token ids, which cost what real ones do), each batch shape run
eagerly, measured, captured and replayed by `zhen.fast_training.TrainingGraphs` as zhen-train does, with the optimizer
step; every step waited for, timed and sorted by what it was. Each variant runs in a fresh process, as a training run
starts: whatever a process pays once per kernel or shape (libraries' plans, kernels loaded on first use) is counted.

  default         zhen's capture (`zhen.fast_training.capturing`): the allocator keeps its cached memory
  emptied-cache   `torch.cuda.graph`, which empties the allocator's cache (and pinned host memory) before every capture
  no-cudnn-sdpa   the default with SDPA's cuDNN backend switched off (`torch.backends.cuda.enable_cudnn_sdp(False)`)
  efficient-first the default with SDPA's backends tried flash, memory-efficient, cuDNN, math (`sdpa_kernel`)
  padded-eager    the default with the eager steps too on batches padded to the rounded shape (49 shapes an epoch
                  of the shared corpora at 4096 tokens instead of 108: `graph_shapes.py`)

Variants take turns, a fresh process each, `--rounds` times; the ratio is to `default`, best round against best round,
and the first round's seconds are shown too.

    python benchmarks/graph_warmup.py --train-files ../shared/data/tatoeba/train.jsonl.gz \\
        ../shared/data/news/train.jsonl.gz --tokenizer runs/c1/model --steps 250 --rounds 2
"""

import argparse
import contextlib
import json
import os
import statistics
import sys
import time

import numpy as np
import torch
from transformers import AutoTokenizer

import zhen.fast_training
from zhen import ZhenConfig, ZhenForConditionalGeneration
from zhen.batching import token_budget_batches
from zhen.data import load_parallel
from zhen.fast_training import TrainingGraphs, pad_batch


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import run_worker  # noqa: E402
from graph_shapes import lengths  # noqa: E402


VARIANTS = ("default", "emptied-cache", "no-cudnn-sdpa", "efficient-first", "padded-eager")


def in_variant(variant: str) -> contextlib.AbstractContextManager:
    """Switch this process to `variant`; the context the steps run in."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    if variant == "emptied-cache":
        zhen.fast_training.capturing = lambda graph, pool, stream: torch.cuda.graph(graph, pool=pool, stream=stream)
    if variant == "padded-eager":
        eager = TrainingGraphs._eager
        TrainingGraphs._eager = lambda self, model, batch, num_items: eager(
            self, model, pad_batch(batch, *self.shape(batch), self.pad_token_id), num_items
        )
    if variant == "no-cudnn-sdpa":
        torch.backends.cuda.enable_cudnn_sdp(False)
    if variant == "efficient-first":
        order = [
            SDPBackend.FLASH_ATTENTION,
            SDPBackend.EFFICIENT_ATTENTION,
            SDPBackend.CUDNN_ATTENTION,
            SDPBackend.MATH,
        ]
        return sdpa_kernel(order, set_priority=True)
    return contextlib.nullcontext()


def epoch_batches(tokenizer, pairs, max_tokens: int, steps: int, max_length: int = 256) -> list[dict]:
    """The first `steps` batches of zhen-train's first epoch (both directions), as random ids of the real lengths."""
    en, zh = (lengths(tokenizer, pairs[column], max_length) for column in ("en", "zh"))
    source, target = np.concatenate([en, zh]), np.concatenate([zh, en])
    generator = torch.Generator().manual_seed(0)
    batches = []
    for rows in token_budget_batches(source, target, max_tokens, seed=0, epoch=0)[:steps]:
        s, t = torch.as_tensor(source[rows]), torch.as_tensor(target[rows])
        input_ids = torch.randint(4, len(tokenizer), (len(rows), int(s.max())), generator=generator)
        attention_mask = (torch.arange(int(s.max())) < s[:, None]).long()
        labels = torch.randint(4, len(tokenizer), (len(rows), int(t.max())), generator=generator)
        labels[torch.arange(int(t.max())) >= t[:, None]] = -100
        input_ids[attention_mask == 0] = tokenizer.pad_token_id
        batches.append({"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels})
    return batches


def first_steps(variant: str, batches: list[dict], config: ZhenConfig, device: torch.device) -> dict:
    with in_variant(variant):
        return _first_steps(variant, batches, config, device)


def _first_steps(variant: str, batches: list[dict], config: ZhenConfig, device: torch.device) -> dict:
    torch.manual_seed(0)
    model = ZhenForConditionalGeneration(config).to(device).train()
    graphs = TrainingGraphs(model, autocast_dtype=torch.bfloat16, pad_token_id=config.pad_token_id)  # as zhen-train's
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    on_gpu = device.type == "cuda"
    if on_gpu:
        torch.cuda.reset_peak_memory_stats(device)
    seconds = {"eager": [], "capture": [], "replay": []}
    start = time.perf_counter()
    for batch in batches:
        graphs_before, replays_before = graphs.graph_count(), graphs.replayed_steps
        step_start = time.perf_counter()
        num_items = batch["labels"].ne(-100).sum()
        graphs(model, batch, num_items_in_batch=num_items)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=False)
        if on_gpu:
            torch.cuda.synchronize(device)
        kind = ("capture" if graphs.graph_count() > graphs_before
                else "replay" if graphs.replayed_steps > replays_before else "eager")  # fmt: skip
        seconds[kind].append(time.perf_counter() - step_start)
    total = time.perf_counter() - start
    result = dict(variant=variant, steps=len(batches), seconds=total, graphs=graphs.describe(),
                  peak_reserved_gib=torch.cuda.max_memory_reserved(device) / 2**30 if on_gpu else 0.0)  # fmt: skip
    for kind, times in seconds.items():
        result[f"{kind}_steps"] = len(times)
        result[f"{kind}_ms"] = 1000 * statistics.mean(times) if times else None
        result[f"{kind}_s"] = sum(times)
    return result


def worker(job: dict) -> dict:
    device = torch.device(job["device"])
    tokenizer = AutoTokenizer.from_pretrained(job["tokenizer"])
    batches = epoch_batches(tokenizer, load_parallel(job["train_files"]), job["max_tokens"], job["steps"])
    special = {k: getattr(tokenizer, k) for k in ("pad_token_id", "bos_token_id", "eos_token_id")}
    config = ZhenConfig.from_preset(
        job["size"],
        vocab_size=len(tokenizer),
        decoder_start_token_id=special["bos_token_id"],
        label_smoothing=0.1,
        **special,
    )
    return first_steps(job["variant"], batches, config, device)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--train-files", nargs="+")
    parser.add_argument("--tokenizer", help="a zhen tokenizer (a model or tokenizer folder)")
    parser.add_argument("--size", default="base")
    parser.add_argument("--max-tokens", type=int, default=4096)
    parser.add_argument("--steps", type=int, default=250)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))))
        return
    if not (args.train_files and args.tokenizer):
        parser.error("--train-files and --tokenizer are required")
    names = args.variants.split(",")
    unknown = sorted(set(names) - set(VARIANTS))
    if unknown:
        parser.error(f"unknown variants {unknown}; known: {', '.join(VARIANTS)}")
    job = dict(train_files=args.train_files, tokenizer=args.tokenizer, size=args.size, max_tokens=args.max_tokens,
               steps=args.steps, device=args.device)  # fmt: skip
    results = []
    for r in range(args.rounds):
        for name in names if r % 2 == 0 else names[::-1]:
            results.append(dict(run_worker(__file__, dict(job, variant=name)), round=r))
            print(f"round {r + 1}, {name}: {results[-1].get('seconds', results[-1].get('error'))}", flush=True)
    where = torch.cuda.get_device_name(args.device) if args.device.startswith("cuda") else args.device
    print(f"# graph_warmup: {args.size}, first {args.steps} steps of an epoch at --max-tokens {args.max_tokens}, "
          f"a fresh process each; torch {torch.__version__}, {where}")  # fmt: skip
    done = [r for r in results if "seconds" in r]
    best = {n: min((r for r in done if r["variant"] == n), key=lambda r: r["seconds"]) for n in names if any(
        r["variant"] == n for r in done)}  # fmt: skip
    first = {n: next(r for r in done if r["variant"] == n) for n in best}
    peer = best.get("default")
    print("| variant | seconds, best round | first round | × default | captures, ms each | eager steps, ms each | "
          "replays, ms each | peak reserved GiB |")  # fmt: skip
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, r in best.items():
        ratio = f"{peer['seconds'] / r['seconds']:.2f}" if peer else ""
        kinds = ("capture", "eager", "replay")
        cells = [f"{r[k + '_steps']}, {r[k + '_ms']:.0f}" if r[k + "_ms"] else "0" for k in kinds]
        print(f"| {name} | {r['seconds']:.1f} | {first[name]['seconds']:.1f} | {ratio} | {' | '.join(cells)} | "
              f"{r['peak_reserved_gib']:.1f} |")  # fmt: skip
    print(json.dumps({"benchmark": "graph_warmup", "results": results}))


if __name__ == "__main__":
    main()
