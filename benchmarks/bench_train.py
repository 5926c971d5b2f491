# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""Training speed: zhen vs MarianMTModel at equal size on identical token-budget batches.

Each step is forward + backward + AdamW step with label-smoothed (0.1) cross-entropy, on batches of ~4k target
tokens cut from 6000 synthetic sentence pairs with a realistic length mix (fairseq-style: sorted windows, token
budget on the padded target). Every system sees the same batches in the same order.

Systems (`--systems`, comma-separated):
  marian-{eager,sdpa}-{fp32,bf16}        MarianMTModel (post-norm, sinusoidal), loss computed from its logits
  zhen-{prenorm,postnorm}-{fp32,bf16}    zhen as zhen-train trains it: `zhen.fast_training.FastTraining` with its
                                         defaults for the device (on a CPU: packed batches, grouped attention, fused
                                         chunked LM head + loss, CPU modules; on a GPU: the plain model, each batch
                                         shape's forward and backward a replayed CUDA graph)
  zhen-{prenorm,postnorm}-{fp32,bf16}-graphs   on a GPU, every batch shape in CUDA graphs (not only where faster)
  zhen-{prenorm,postnorm}-{fp32,bf16}-packed   the packed path on any device
  zhen-{prenorm,postnorm}-{fp32,bf16}-logits   the packed path, but computing full logits then the loss, like Marian
  zhen-{prenorm,postnorm}-{fp32,bf16}-plain    the plain model (`model(**batch).loss`), no fast path
  zhen-{prenorm,postnorm}-fp32-{matmul,onednn}  the fast path with its float32 linear layers multiplied by PyTorch's
                                         matmul or by oneDNN (`zhen.hardware`'s `float32_training` forced)
  zhen-*-{attnsdpa,attnmatmul}           the fast path attending by SDPA or by two matmuls and a softmax (e.g.
                                         `zhen-prenorm-fp32-matmul-attnsdpa`, the float32 path of Intel CPUs)
  {marian-*,zhen-*}-compiled             the plain model with each encoder and decoder layer under
                                         `torch.compile(dynamic=True)` (regional compilation; warm-up compiles)
  {marian-*,zhen-*}-compiledgraphs       the same with `mode="reduce-overhead"`: on a GPU each compiled layer also
                                         replayed as a CUDA graph per shape (what `torch.compile` offers any model)
bf16 means `torch.autocast(device, torch.bfloat16)` around forward and loss, fp32 master weights.

Reported: target tokens/s, padding fraction, peak RSS, time in the kernel and minor page faults per step (on CPU
mostly fresh memory being paged in), matmul FLOP/s (3 x forward matmuls on the padded batch) as a
share of this machine's 2048^3 GEMM rate in the same precision, measured in the same run, and the ratio to Marian's
best configuration of the same precision. Each system runs in its own process; `--rounds N` repeats the whole set
and keeps each system's best round; `--repeat N` runs the measured batches N times within a worker and keeps each
batch's fastest step. `--interleave` runs all systems in one process instead, taking turns on every batch (the order
rotating), so that the speed drift of a shared machine reaches every system alike; peak memory is then not reported,
and the GEMM peak is measured in every turn as well: "% peak in its turns" sets each batch's fastest step against
the peak measured in the same turn (the share of peak on a machine whose speed moves within minutes).

    python benchmarks/bench_train.py                                  # tiny and base, fp32 and bf16
    python benchmarks/bench_train.py --sizes base --precisions fp32 --rounds 2
    python benchmarks/bench_train.py --sizes base --precisions fp32 --interleave --repeat 2   # paired turns
    python benchmarks/bench_train.py --scaling 1024,2048,4096,8192 --sizes base --precisions fp32 \\
        --systems marian-sdpa-fp32,zhen-prenorm-fp32                  # step time against batch tokens
"""

import inspect
import json
import math
import os
import random
import resource
import sys
import time
import warnings

import torch

from zhen import hardware
from zhen.fast_training import FastTraining


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (  # noqa: E402
    BASELINE,
    SIZES,
    batch_stats,
    benchmark_parser,
    gemm_peak,
    gemm_rate,
    machine_info,
    marian_model,
    peak_memory_mib,
    print_table,
    run_worker,
    synchronize,
    synthetic_pairs,
    to_device,
    token_batches,
    train_flops,
    zhen_model,
)


PRECISIONS = {"fp32": torch.float32, "bf16": torch.bfloat16}
PEAK_SECONDS_A_TURN = 0.3  # `--interleave`: the GEMM peak measured for this long in every turn
ATTENTION_GROUPS = inspect.signature(FastTraining).parameters["attention_groups"].default


def systems_for(precisions: list[str]) -> list[str]:
    out = []
    for p in precisions:
        out += [f"marian-eager-{p}", f"marian-sdpa-{p}", f"zhen-postnorm-{p}", f"zhen-prenorm-{p}"]
    return out


def build_step(system: str, size: str, optimizer: str, loss_chunk_size: int | None, device: str = "cpu",
               attention_groups: int = ATTENTION_GROUPS):  # fmt: skip
    """Returns `step(batch) -> loss` for one system."""
    family, kind, precision, *extra = system.split("-")
    torch.manual_seed(0)
    fast = None
    if family == "marian":
        model = marian_model(size, attn=kind)
    else:
        model = zhen_model(size, variant=kind).to(device)
        if not {"plain", "compiled", "compiledgraphs"} & set(extra):
            packed = bool({"packed", "logits"} & set(extra))
            trainer = [e for e in extra if e in ("matmul", "onednn")]
            kernel = [e for e in extra if e in ("attnsdpa", "attnmatmul")]
            with hardware.forced(**{"float32_training": trainer[0]} if trainer else {}):
                fast = FastTraining(model, mixed_precision=precision.replace("fp32", "no"), packing=packed or None,
                                    fused_loss="logits" not in extra if packed else None,
                                    loss_chunk_size=loss_chunk_size, attention_groups=attention_groups,
                                    attention_kernel=kernel[0].removeprefix("attn") if kernel else "auto",
                                    cuda_graphs=True if "graphs" in extra else None)  # fmt: skip
    model.to(device).train()
    if {"compiled", "compiledgraphs"} & set(extra):  # one graph serves every layer of a stack: compiles in seconds
        mode = "reduce-overhead" if "compiledgraphs" in extra else None
        for layer in [*model.model.encoder.layers, *model.model.decoder.layers]:
            layer.compile(dynamic=True, mode=mode)
    optim = torch.optim.AdamW(model.parameters(), lr=1e-4, **{optimizer: True})
    autocast = torch.autocast(torch.device(device).type, torch.bfloat16, enabled=precision == "bf16")

    graphs = fast.graphs if fast is not None else None

    def step(batch):
        if graphs is not None:
            loss = graphs(model, {key: batch[key] for key in ("input_ids", "attention_mask", "labels")})
            optim.step()
            optim.zero_grad(set_to_none=False)  # the graphs add to the same gradients
            return loss
        with autocast:
            if family == "marian":  # MarianMTModel's own loss has no label smoothing
                logits = model(
                    input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                    decoder_input_ids=batch["decoder_input_ids"],
                ).logits  # fmt: skip
                loss = torch.nn.functional.cross_entropy(
                    logits.float().view(-1, logits.shape[-1]), batch["labels"].view(-1), label_smoothing=0.1
                )
            elif fast is None:
                loss = model(
                    input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                    decoder_input_ids=batch["decoder_input_ids"], labels=batch["labels"],
                ).loss  # fmt: skip
            else:
                loss = fast.loss(model, {key: batch[key] for key in ("input_ids", "attention_mask", "labels")})
        loss.backward()
        optim.step()
        optim.zero_grad(set_to_none=True)
        return loss.detach()

    step.graphs = graphs
    return step


def make_batches(size: str, max_tokens: int, count: int, seed: int = 0) -> list[dict]:
    batches = token_batches(synthetic_pairs(max(6000, 3 * count * max_tokens // 25), SIZES[size]["vocab"]), max_tokens)
    random.Random(seed).shuffle(batches)  # a trainer's order: mixed lengths, not shortest first
    return batches[:count]


def worker(job: dict) -> dict | list[dict]:
    """One system (`job["system"]`), or with `job["systems"]` all of them in this process taking turns step by step."""
    warnings.simplefilter("ignore")
    torch.set_num_threads(job["threads"])
    device = job.get("device", "cpu")
    systems = job.get("systems") or [job["system"]]
    batches = make_batches(job["size"], job["max_tokens"], job["warmup"] + job["steps"])
    steps = {
        s: build_step(s, job["size"], job["optimizer"], job["loss_chunk_size"], device, job["attention_groups"])
        for s in systems
    }
    measured = batches[job["warmup"] :]
    rates = {}  # taking turns, the GEMM peak of each system's precision is measured in every turn too
    if len(systems) > 1:
        rates = {precision_of(s): gemm_rate(PRECISIONS[precision_of(s)], device=device) for s in systems}
    timed = best_step_times(steps, batches[: job["warmup"]], measured, job.get("repeat", 1), device, rates)
    best, last_loss, kernel, peak_at_best = timed
    stats = [batch_stats(b) for b in measured]
    flops = [train_flops(job["size"], b) for b in measured]
    paired_share = {}  # the time each batch's FLOPs take at the peak of its fastest step's turn, over the steps' time
    if rates:
        paired_share = {s: sum(f / p for f, p in zip(flops, peak_at_best[s])) / sum(best[s]) for s in systems}
    results = [
        dict(
            {k: v for k, v in job.items() if k != "systems"},
            system=system,
            seconds=sum(best[system]),
            step_s=sum(best[system]) / len(measured),
            tgt_tokens=sum(s["tgt_tokens"] for s in stats),
            padding=sum(s["padding"] * s["padded_tokens"] for s in stats) / sum(s["padded_tokens"] for s in stats),
            flops=sum(flops),
            paired_peak_share=paired_share.get(system),
            rss_mib=None if len(systems) > 1 else peak_memory_mib(device),  # one process: no per-system peak
            last_loss=last_loss[system],
            kernel_s=kernel[system][0],  # per step: time in the kernel, mostly paging in fresh memory on CPU
            page_faults=kernel[system][1],
            graphs=steps[system].graphs.describe() if steps[system].graphs else None,
        )
        for system in systems
    ]
    return results if "systems" in job else results[0]


def precision_of(system: str) -> str:
    return system.removesuffix(BASELINE).split("-")[2]


def best_step_times(steps: dict, warmup: list[dict], measured: list[dict], repeat: int, device: str,
                    rates: dict | None = None):  # fmt: skip
    """Each system's fastest time for each measured batch over `repeat` passes (timeit's best of N, so that a machine
    shared with other jobs slows the figures less). With several systems they take turns on every batch, the order
    rotating, so that the machine's drift over minutes reaches them alike; `rates` (precision -> [`gemm_rate`]) are
    measured in every turn too. Returns the times, each last loss, each system's mean (kernel seconds, minor page
    faults) per step, and for each system and batch the GEMM peak of its precision in the turn of its fastest step."""
    for step in steps.values():
        for batch in warmup:
            step(to_device(batch, device))
    on_device = [to_device(batch, device) for batch in measured]
    if device != "cpu":  # GPU kernels (cuDNN attention plans, ...) are set up per shape, and zhen's CUDA graphs
        for step in steps.values():  # decide per shape over its first four batches: time the steady state
            for _ in range(4):
                for batch in on_device:
                    step(batch)
    names = list(steps)
    best, last_loss = {name: [math.inf] * len(on_device) for name in names}, {}
    peak_at_best = {name: [math.nan] * len(on_device) for name in names}
    kernel = {name: [0.0, 0, 0] for name in names}  # system seconds, minor page faults, steps
    for turn in range(repeat):
        for i, batch in enumerate(on_device):
            shift = (turn + i) % len(names)
            peaks = {precision: rate(PEAK_SECONDS_A_TURN) for precision, rate in (rates or {}).items()}
            for name in names[shift:] + names[:shift]:
                synchronize(device)
                usage, start = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
                loss = steps[name](batch)
                synchronize(device)
                seconds = time.perf_counter() - start
                if seconds < best[name][i]:
                    best[name][i], peak_at_best[name][i] = seconds, peaks.get(precision_of(name), math.nan)
                last_loss[name] = float(loss)
                after = resource.getrusage(resource.RUSAGE_SELF)
                kernel[name][0] += after.ru_stime - usage.ru_stime
                kernel[name][1] += after.ru_minflt - usage.ru_minflt
                kernel[name][2] += 1
    kernel = {name: (sys_s / n, faults / n) for name, (sys_s, faults, n) in kernel.items()}
    return best, last_loss, kernel, peak_at_best


def run(args, size: str, max_tokens: int, systems: list[str], peaks: dict) -> list[dict]:
    best: dict[str, dict] = {}
    job = dict(
        size=size, max_tokens=max_tokens, steps=args.steps, warmup=args.warmup, optimizer=args.optimizer,
        loss_chunk_size=args.loss_chunk_size, threads=args.threads, device=args.device, repeat=args.repeat,
        attention_groups=args.attention_groups,
    )  # fmt: skip
    for _ in range(args.rounds):
        if args.interleave:
            results = run_worker(__file__, dict(job, systems=systems))
            results = results if isinstance(results, list) else [dict(results, system=s) for s in systems]
        else:
            results = [run_worker(__file__, dict(job, system=system), baseline_tree=args.baseline_tree)
                       for system in systems]  # fmt: skip
        for result in results:
            system = result["system"]
            if "error" in result or system not in best or result["seconds"] < best[system].get("seconds", 1e18):
                best[system] = result
    rows = [best[s] for s in systems]
    for r in rows:
        if "error" in r:
            continue
        precision = precision_of(r["system"])
        r["tok_s"] = r["tgt_tokens"] / r["seconds"]
        r["gflop_s"] = r["flops"] / r["seconds"] / 1e9
        r["peak_share"] = r["flops"] / r["seconds"] / peaks[precision]
    for r in rows:
        if "error" in r:
            continue
        precision = precision_of(r["system"])
        marian = [
            m for m in rows if "error" not in m and m["system"].startswith("marian") and f"-{precision}" in m["system"]
        ]
        if marian:
            r["x_marian_best"] = r["tok_s"] / max(m["tok_s"] for m in marian)
    return rows


def main(argv=None):
    parser = benchmark_parser(__doc__, "cpu, or cuda to run the same benchmark on a GPU")
    parser.add_argument("--precisions", default="fp32,bf16")
    parser.add_argument("--systems", help="default: Marian eager/sdpa and zhen post-/pre-norm in each precision")
    parser.add_argument("--max-tokens", type=int, default=4096, help="target-token budget per batch (padded)")
    parser.add_argument("--scaling", help="comma-separated token budgets: step time against batch tokens instead")
    parser.add_argument("--steps", type=int, default=3, help="measured steps per system")
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=1, help="run the measured batches N times, keep each one's best")
    parser.add_argument(
        "--interleave", action="store_true", help="all systems in one process, taking turns step by step (no per-system"
        " peak memory): the ratios then do not depend on how the machine's speed drifts between systems' turns",
    )  # fmt: skip
    parser.add_argument("--optimizer", default="fused", choices=["fused", "foreach"], help="AdamW kernel, all systems")
    parser.add_argument("--loss-chunk-size", type=int, help="zhen's fused loss chunk (rows; default: by dtype)")
    parser.add_argument("--attention-groups", type=int, default=ATTENTION_GROUPS,
                        help="zhen's groups of similar-length sentences in packed attention")  # fmt: skip
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))))
        return
    torch.set_num_threads(args.threads)
    precisions = args.precisions.split(",")
    systems = args.systems.split(",") if args.systems else systems_for(precisions)
    if args.baseline_tree:
        if args.interleave:
            parser.error("--baseline-tree runs each revision in its own process: leave out --interleave")
        systems += [s + BASELINE for s in systems if s.startswith("zhen")]
    peaks = {precision: gemm_peak(dtype, device=args.device) for precision, dtype in PRECISIONS.items()}
    info = machine_info(args.device)
    info.update(gemm_gflop_s={k: round(v / 1e9, 1) for k, v in peaks.items()})
    print(f"# bench_train  {info}  optimizer: AdamW({args.optimizer}=True)", flush=True)
    results = []
    for size in args.sizes.split(","):
        for max_tokens in [int(n) for n in args.scaling.split(",")] if args.scaling else [args.max_tokens]:
            for precision in peaks:  # re-measured before each table, the best so far kept: load only lowers it
                peaks[precision] = max(peaks[precision], gemm_peak(PRECISIONS[precision], device=args.device))
            rows = run(args, size, max_tokens, systems, peaks)
            print(f"\n## {size}, ~{max_tokens} target tokens per batch, {args.steps} steps")
            print_table(
                rows,
                [("system", "system", "s"), ("tok_s", "tgt tok/s", ".0f"), ("x_marian_best", "× Marian best", ".2f"),
                 ("step_s", "s/step", ".2f"), ("padding", "padding", ".1%"), ("gflop_s", "GFLOP/s", ".1f"),
                 ("peak_share", "% GEMM peak", ".1%"), ("paired_peak_share", "% peak in its turns", ".1%"),
                 ("rss_mib", "peak mem MiB", ".0f"),
                 ("kernel_s", "kernel s/step", ".2f"), ("page_faults", "page faults/step", ".0f"),
                 ("error", "error", "s")],
            )  # fmt: skip
            for r in rows:
                if r.get("graphs"):
                    print(f"{r['system']}: {r['graphs']}")
            results += rows
    info["load1_end"] = round(os.getloadavg()[0], 2)
    info["gemm_gflop_s"] = {k: round(v / 1e9, 1) for k, v in peaks.items()}
    print(json.dumps(dict(benchmark="train", machine=info, results=results)))


if __name__ == "__main__":
    main()
