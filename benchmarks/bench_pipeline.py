# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""Translating a list of texts the way users call it: zhen's translation pipeline and `zhen.translate` against what
Transformers 4's `TranslationPipeline` did with a Marian model, on a trained checkpoint.

  generate-bf16, generate-fp32   the peer: the texts in batches in input order, each padded and translated by
                                 `model.generate` on the model in bf16 or float32 (v4's pipeline batching) with SDPA
                                 attention; `-eager` (`generate-bf16-eager`, `generate-fp32-eager`): with eager
                                 attention. The ratio is to the fastest peer measured, Marian's best PyTorch
                                 configuration on the machine (eager bf16 measured faster than SDPA on an AMD EPYC)
  pipeline                       `ZhenTranslationPipeline(...)(texts, batch_size=...)`
  pipeline-lazy                  the same pipeline given a generator of the texts (as a dataset is given), its
                                 results iterated
  translate                      `zhen.translate(texts, model, tokenizer, batch_size=...)`

Every system gets the same texts and the same length limit (`zhen.pipeline_zhen.default_max_new_tokens`); each makes one
untimed call first (`--warm-calls N`: N; 33 takes zhen past the calls after which it drafts), then runs once per round,
in turn, and keeps its best round. Prints sentences/s, the milliseconds a call takes and the ratio to the peer.
`--per-call N` hands the texts over N at a time, one call each (an interactive user's few texts: the session, the
streams and the batches of one call), instead of all in one call. `--interleave` has the systems take turns on every
call (the order rotating) rather than on every round, and adds the median over calls of each call's ratio to the peer's
time on the same call: on a machine whose speed drifts within minutes, the paired figure.

    python benchmarks/bench_pipeline.py --model runs/zhen/model --test ../shared/data/news/valid.jsonl.gz --limit 256
    python benchmarks/bench_pipeline.py --model runs/zhen/model --test ../shared/data/tatoeba/valid.jsonl.gz \
        --limit 64 --per-call 1 --systems generate-bf16,generate-fp32,pipeline,translate
    python benchmarks/bench_pipeline.py --model runs/zhen/model --test ../shared/data/tatoeba/valid.jsonl.gz \
        --limit 16 --per-call 1 --num-beams 4 --systems generate-bf16,translate --interleave --rounds 3
"""

import json
import os
import statistics
import sys
import time
import warnings

import torch


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import checkpoint_parser, cpu_description, print_table  # noqa: E402


PEERS = ("generate-bf16", "generate-fp32", "generate-bf16-eager", "generate-fp32-eager")
SYSTEMS = (*PEERS, "pipeline", "pipeline-lazy", "translate")


def main(argv=None):
    parser = checkpoint_parser(__doc__, SYSTEMS, limit=256)
    parser.add_argument("--per-call", type=int, help="texts per call (default: all in one call)")
    parser.add_argument("--device", default="cpu", help="where the models run: cpu, cuda, ...")
    parser.add_argument("--interleave", action="store_true", help="systems take turns on every call, not every round")
    parser.add_argument("--warm-calls", type=int, default=1, help="untimed calls of each system first")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    torch.set_num_threads(args.threads)
    from transformers.utils import logging

    logging.set_verbosity_error()
    from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast, translate
    from zhen.data import load_parallel
    from zhen.evaluation import parallel_columns
    from zhen.pipeline_zhen import ZhenTranslationPipeline, default_max_new_tokens

    device = torch.device(args.device)
    model = ZhenForConditionalGeneration.from_pretrained(args.model).to(device).eval()
    peer_models = {}

    def peer_model(name: str):
        if name not in peer_models:
            dtype = torch.bfloat16 if "bf16" in name else torch.float32
            attention = "eager" if name.endswith("-eager") else "sdpa"
            peer_models[name] = ZhenForConditionalGeneration.from_pretrained(
                args.model, dtype=dtype, attn_implementation=attention
            ).to(device).eval()  # fmt: skip
        return peer_models[name]

    tokenizer = ZhenTokenizerFast.from_pretrained(args.model)
    columns = parallel_columns(load_parallel(args.test), args.limit)

    def generate_in_input_order(m, texts, src, tgt, num_beams):
        tokenizer.src_lang = src
        for start in range(0, len(texts), args.batch_size):
            batch = tokenizer(texts[start : start + args.batch_size], padding=True, return_tensors="pt").to(device)
            limit = default_max_new_tokens(batch["input_ids"].shape[1], m.config, m.generation_config)
            with torch.inference_mode():
                m.generate(**batch, forced_bos_token_id=tokenizer.get_lang_id(tgt), num_beams=num_beams,
                           max_new_tokens=limit)  # fmt: skip

    def generating_by(name: str):
        return lambda *call: generate_in_input_order(peer_model(name), *call)

    pipe = ZhenTranslationPipeline(model=model, tokenizer=tokenizer, device=device)
    systems = {
        **{name: generating_by(name) for name in PEERS},
        "pipeline": lambda texts, src, tgt, beams: pipe(
            texts, src_lang=src, tgt_lang=tgt, num_beams=beams, batch_size=args.batch_size
        ),  # fmt: skip
        "pipeline-lazy": lambda texts, src, tgt, beams: list(
            pipe((text for text in texts), src_lang=src, tgt_lang=tgt, num_beams=beams, batch_size=args.batch_size)
        ),
        "translate": lambda texts, src, tgt, beams: translate(
            texts, model, tokenizer, src_lang=src, tgt_lang=tgt, num_beams=beams, batch_size=args.batch_size
        ),  # fmt: skip
    }
    names = [s for s in args.systems.split(",") if s]
    unknown = sorted(set(names) - set(systems))
    if unknown:
        parser.error(f"unknown systems {unknown}; known: {', '.join(SYSTEMS)}")
    results = []
    for num_beams in map(int, args.num_beams.split(",")):
        for direction in args.directions.split(","):
            src, tgt = direction.split("-")
            texts = columns[src]
            per_call = args.per_call or len(texts)
            calls = [texts[start : start + per_call] for start in range(0, len(texts), per_call)]
            best, call_seconds = timed_rounds(systems, names, calls, (src, tgt, num_beams), args, device)
            peers = [name for name in PEERS if name in best]
            peer = min((best[name] for name in peers), default=None)
            for name in names:
                row = dict(direction=direction, beams=num_beams, system=name, sent_s=len(texts) / best[name],
                           ms_call=1000 * best[name] / len(calls))  # fmt: skip
                row["x_peer"] = peer / best[name] if peer else None
                if args.interleave and peers:
                    pairs = zip(*(call_seconds[p] for p in peers), call_seconds[name])
                    row["x_peer_paired"] = statistics.median(min(times) / own for *times, own in pairs)
                results.append(row)
    per_call = f"{args.per_call} a call" if args.per_call else "all in one call"
    machine = dict(cpu_description(), device=str(device))
    if device.type == "cuda":
        machine["gpu"] = torch.cuda.get_device_name(device)
    print(f"# {args.model} on {args.test}: {len(columns['en'])} sentences ({per_call}), batch {args.batch_size}, "
          f"{args.threads} threads, best of {args.rounds}; {json.dumps(machine)}")  # fmt: skip
    columns = [("direction", "direction", ""), ("beams", "beams", ""), ("system", "system", ""),
               ("sent_s", "sent/s", ".1f"), ("ms_call", "ms a call", ".1f"),
               ("x_peer", "× v4-style generate, best", ".2f")]  # fmt: skip
    if args.interleave:
        columns.append(("x_peer_paired", "× the same, median of paired calls", ".2f"))
    print_table(results, columns)
    print(json.dumps({"benchmark": "pipeline", "results": results}))


def timed_rounds(systems: dict, names: list[str], calls: list, call_args: tuple, args, device) -> tuple[dict, dict]:
    """Each system's best round (seconds for all the calls, after one untimed call) and, with `--interleave`, every
    call's seconds by system."""
    best = dict.fromkeys(names, float("inf"))
    call_seconds = {name: [] for name in names}

    def timed(name, some_calls) -> float:
        start = time.perf_counter()
        for call in some_calls:
            systems[name](call, *call_args)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        return time.perf_counter() - start

    for name in names:  # warm-up: sessions built, kernels chosen (and, with enough calls, zhen's draft made)
        timed(name, [calls[i % len(calls)] for i in range(args.warm_calls)])
    for _ in range(args.rounds):
        if not args.interleave:
            for name in names:
                best[name] = min(best[name], timed(name, calls))
            continue
        totals = dict.fromkeys(names, 0.0)
        for i, call in enumerate(calls):
            for name in names[i % len(names) :] + names[: i % len(names)]:
                seconds = timed(name, [call])
                totals[name] += seconds
                call_seconds[name].append(seconds)
        best = {name: min(best[name], totals[name]) for name in names}
    return best, call_seconds


if __name__ == "__main__":
    main()
