# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""What reduced-precision inference (bf16 session weights, int8) costs in BLEU on a trained checkpoint, and its speed.

Translates the test set in both directions with the float32 model (zhen.fast_generation), with bf16 copies of its
decoder weights (a `FastDecoder(model, weights="bf16")` session, what `zhen.translate` uses on CPUs with native bf16),
with its int8 dynamic quantisation (zhen.quantization; also PyTorch's 7-bit activations by 8-bit weights, "int8
PyTorch's scheme", and where the CPU's kernels take 8-bit activations by 8-bit weights, what a CPU without VNNI gets,
"int8 without VNNI"), and optionally with CTranslate2 float32/int8 exports (`--ct2`);
each PyTorch system in one decoding session per direction, as `zhen.translate` opens one per call (its sentences/s
include making the session's weights), its batches longest first in `zhen.hardware.decoding_streams` streams, and
CTranslate2 with as many `inter_threads` (its batches submitted at once), each engine's way to use several cores. Then
it scores every system with sacreBLEU (`zh` tokenizer into Chinese, `13a` into English) and prints BLEU, chrF, the BLEU
change against float32 of the same engine, the share of sentences translated identically, and sentences/s. The targets:
bf16 within 0.2 BLEU, int8 within 0.5. (CTranslate2's beam search normalises scores by GNMT's ((5 + length) / 6)^alpha,
not by length^alpha as Transformers does, so its beam outputs differ from PyTorch's unless `length_penalty=0`; its
greedy outputs are equal.)

    python benchmarks/bleu_int8.py --model checkpoints/zhen-base --test data/wmt/test.jsonl --num-beams 4 --ct2
    python benchmarks/bleu_int8.py ... --ct2 --rounds 3   # on a machine whose speed drifts: best of 3 turns each
    python benchmarks/bleu_int8.py ... --ct2 --interleave --rounds 2   # ... or drifts within seconds: turns per batch
"""

import argparse
import contextlib
import copy
import json
import math
import os
import sys
import tempfile
import time
import warnings

import torch


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import print_table  # noqa: E402


def translate_ids(translate_batches, tokenizer, texts, src, tgt, batch_size, num_beams, max_new_tokens_for):
    """Sorted longest first, batched, back in input order; `translate_batches([generate kwargs, ...]) -> [ids, ...]`
    (the batches in parallel where the system decodes several at once)."""
    rows, batches = make_batches(tokenizer, texts, src, tgt, batch_size, num_beams, max_new_tokens_for)
    return in_input_order(tokenizer, rows, translate_batches(batches), len(texts))


def make_batches(tokenizer, texts, src, tgt, batch_size, num_beams, max_new_tokens_for):
    """The texts' indices sorted longest first in batches, and each batch's `generate` arguments."""
    tokenizer.src_lang, tokenizer.tgt_lang = src, tgt
    ids = tokenizer(texts)["input_ids"]
    order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))
    rows = [order[start : start + batch_size] for start in range(0, len(order), batch_size)]
    batches = []
    for batch_rows in rows:
        batch = tokenizer.pad({"input_ids": [ids[i] for i in batch_rows]}, return_tensors="pt")
        batches.append(dict(
            input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
            forced_bos_token_id=tokenizer.get_lang_id(tgt), num_beams=num_beams,
            max_new_tokens=max_new_tokens_for(max(len(ids[i]) for i in batch_rows)),
        ))  # fmt: skip
    return rows, batches


def in_input_order(tokenizer, rows, outputs_ids, count):
    outputs = [""] * count
    for batch_rows, out in zip(rows, outputs_ids):
        for i, text in zip(batch_rows, tokenizer.batch_decode(out, skip_special_tokens=True)):
            outputs[i] = text
    return outputs


def taking_turns(opened: dict, batches: list, group: int, turn: int) -> tuple[dict, dict]:
    """Every system of `opened` (`translate_batches` each) on each group of `group` batches in turn, the order
    reversed every other group (and every other `turn`): each system's output ids and seconds."""
    outputs, seconds = {key: [] for key in opened}, dict.fromkeys(opened, 0.0)
    for index, start in enumerate(range(0, len(batches), group)):
        keys = list(opened)[:: -1 if (index + turn) % 2 else 1]
        for key in keys:
            began = time.perf_counter()
            outputs[key].extend(opened[key](batches[start : start + group]))
            seconds[key] += time.perf_counter() - began
    return outputs, seconds


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="trained zhen checkpoint folder (with its tokenizer)")
    parser.add_argument("--test", required=True, help="parallel test file (JSON Lines/TSV/Parquet with en and zh)")
    parser.add_argument("--directions", default="en-zh,zh-en")
    parser.add_argument("--num-beams", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--limit", type=int, help="score only the first N pairs")
    parser.add_argument("--ct2", action="store_true", help="also CTranslate2 float32 and int8 exports")
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--rounds", type=int, default=1,
                        help="translate each direction N times, the systems taking turns (their order reversed every "
                             "other round); sent/s is each system's fastest round")  # fmt: skip
    parser.add_argument("--interleave", action="store_true",
                        help="open every system at once and let them take turns on each group of batches decoded at "
                             "once (the order reversed every other group), every round: on a machine whose speed "
                             "drifts within seconds the drift weighs on all alike. Sessions open before the turns "
                             "(their opening is not timed), and a system's streams (CTranslate2's workers) wait for "
                             "each other at the end of every group")  # fmt: skip
    parser.add_argument("--skip-bf16", action="store_true",
                        help="leave out the bf16 session: on a CPU without bf16 instructions it runs at PyTorch's "
                             "emulated bf16 rate (a 0.3 GFLOP/s GEMM on an AMD Zen 3)")  # fmt: skip
    parser.add_argument("--each-batch-alone", action="store_true",
                        help="also the bf16 and int8 sessions decoding each greedy batch to its end, without pooling "
                             "the batches' tails (FastDecoder(pool_tails=False))")  # fmt: skip
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    torch.set_num_threads(args.threads)

    from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast, hardware
    from zhen.data import load_parallel
    from zhen.evaluation import parallel_columns, score
    from zhen.fast_generation import FastDecoder
    from zhen.hardware import decoding_streams
    from zhen.quantization import quantize_dynamic

    model = ZhenForConditionalGeneration.from_pretrained(args.model, dtype=torch.float32).eval()
    tokenizer = ZhenTokenizerFast.from_pretrained(args.model)
    columns = parallel_columns(load_parallel(args.test), args.limit)
    table = model.config.max_position_embeddings if model.config.position_embedding_type != "rope" else 10**6

    def max_new_tokens_for(source_length):
        return max(1, min(int(1.5 * source_length) + 10, 512, table - 1))

    streams = decoding_streams(torch.device("cpu"))

    @contextlib.contextmanager
    def session(model, weights, pool_tails=True):  # as zhen.translate decodes: one session, batches in streams
        with FastDecoder(model, weights=weights, pool_tails=pool_tails) as decoder:
            yield lambda batches: list(decoder.generate_batches(batches, streams))

    def ct2_translate(generator):  # CTranslate2's parallel batches: submitted at once to `inter_threads` workers
        return lambda batches: [wait() for wait in [generator.generate(**b, asynchronous=True) for b in batches]]

    quantized = quantize_dynamic(model)
    # Sessions open at once need models of their own: a second session of one model waits for the first to end.
    bf16_model = copy.deepcopy(model) if args.interleave else model
    systems = {  # (family, weights): opens `generate`; each reduced precision is compared with float32 of its family
        ("PyTorch", "float32"): lambda: session(model, "plain"),
        ("PyTorch", "bf16"): lambda: session(bf16_model, "bf16"),
        ("PyTorch", "int8"): lambda: session(quantized, "auto"),
    }
    if args.skip_bf16:
        del systems["PyTorch", "bf16"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        spec = {torch.nn.Linear: torch.ao.quantization.per_channel_dynamic_qconfig}  # a scale per row, as zhen's
        pytorchs = torch.ao.quantization.quantize_dynamic(copy.deepcopy(model), spec, torch.qint8)
    systems["PyTorch", "int8 PyTorch's scheme"] = lambda: session(pytorchs, "auto")
    if hardware.current().int8_full_range == "on":  # the default's 8-bit activations by 8-bit weights
        with hardware.forced(int8_full_range="off"):
            narrow = quantize_dynamic(model)
        systems["PyTorch", "int8 without VNNI"] = lambda: session(narrow, "auto")
    if args.each_batch_alone:  # greedy search without pooling its batches' tails (`zhen.pooled_tails`)
        alone_bf16 = copy.deepcopy(model) if args.interleave else model
        alone_int8 = copy.deepcopy(quantized) if args.interleave else quantized
        if not args.skip_bf16:
            systems["PyTorch", "bf16 each batch alone"] = lambda: session(alone_bf16, "bf16", pool_tails=False)
        systems["PyTorch", "int8 each batch alone"] = lambda: session(alone_int8, "auto", pool_tails=False)
    workdir = tempfile.TemporaryDirectory()
    if args.ct2:
        from zhen.convert_ctranslate2 import CTranslate2Generator, convert

        for quantization in ("float32", "int8"):
            out = convert(args.model, os.path.join(workdir.name, quantization), quantization=quantization)
            threads = dict(inter_threads=streams, intra_threads=max(1, args.threads // streams))
            translate = ct2_translate(CTranslate2Generator(out, compute_type=quantization, **threads))
            systems["CTranslate2", quantization] = lambda translate=translate: contextlib.nullcontext(translate)

    rows = []
    for direction in args.directions.split(","):
        src, tgt = direction.split("-")
        reference, outputs, seconds = {}, {}, {}
        for round_ in range(args.rounds):
            if args.interleave:
                rows_, batches = make_batches(tokenizer, columns[src], src, tgt, args.batch_size, args.num_beams,
                                              max_new_tokens_for)  # fmt: skip
                with contextlib.ExitStack() as stack, torch.inference_mode():
                    opened = {key: stack.enter_context(open_()) for key, open_ in systems.items()}
                    ids, turns = taking_turns(opened, batches, streams, round_)
                for key in systems:
                    outputs[key] = in_input_order(tokenizer, rows_, ids[key], len(columns[src]))
                    seconds[key] = min(seconds.get(key, math.inf), turns[key])
                continue
            for key in list(systems)[:: -1 if round_ % 2 else 1]:
                start = time.perf_counter()
                with torch.inference_mode(), systems[key]() as translate_batches:
                    outputs[key] = translate_ids(
                        translate_batches,
                        tokenizer,
                        columns[src],
                        src,
                        tgt,
                        args.batch_size,
                        args.num_beams,
                        max_new_tokens_for,
                    )
                seconds[key] = min(seconds.get(key, math.inf), time.perf_counter() - start)
        for (family, weights), hypotheses in outputs.items():
            result = score(hypotheses, columns[tgt], tgt)
            row = dict(direction=direction, system=f"{family} {weights}", bleu=result["bleu"], chrf=result["chrf"],
                       sent_s=len(hypotheses) / seconds[family, weights])  # fmt: skip
            base_bleu, base_hypotheses = reference.setdefault(family, (result["bleu"], hypotheses))
            row["delta_bleu"] = result["bleu"] - base_bleu
            row["identical"] = sum(a == b for a, b in zip(hypotheses, base_hypotheses)) / len(hypotheses)
            row["signature"] = result["bleu_signature"]
            rows.append(row)
    print(f"# {args.model} on {args.test}: {len(columns['en'])} pairs, beam {args.num_beams}, {args.threads} threads")
    print_table(
        rows,
        [("direction", "direction", "s"), ("system", "system", "s"), ("bleu", "BLEU", ".2f"),
         ("delta_bleu", "Δ BLEU vs its float32", "+.2f"), ("chrf", "chrF", ".2f"),
         ("identical", "same as its float32", ".1%"), ("sent_s", "sent/s", ".1f")],
    )  # fmt: skip

    def worst(suffix):
        return min((r["delta_bleu"] for r in rows if r["system"].endswith(suffix)), default=0.0)

    bf16_within = None if args.skip_bf16 else worst("bf16") >= -0.2  # None: not measured
    print(json.dumps(dict(benchmark="bleu_int8", bf16_within_0_2_bleu=bf16_within,
                          int8_within_half_bleu=worst("int8") >= -0.5, rows=rows)))  # fmt: skip


if __name__ == "__main__":
    main()
