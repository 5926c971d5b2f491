# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""Translation speed: zhen vs MarianMTModel vs CTranslate2, on random weights of equal size and equal work.

256 synthetic source sentences (realistic length mix, sorted by length as a translation front end does) in batches of
32; every system is forced to produce exactly `--new-tokens` tokens per sentence (min = max new tokens, the target
language code included), so random weights do the same work as trained ones. Greedy and beam 4.

Systems (`--systems`, comma-separated):
  marian-{eager,sdpa}-{fp32,bf16}   MarianMTModel.generate (post-norm, sinusoidal, same size as zhen)
  marian-sdpa-int8                  MarianMTModel with torch dynamic int8 quantisation (for a same-precision ratio)
  marian-streams-{fp32,bf16}        MarianMTModel.generate (SDPA) on as many batches at once as zhen's streams, each in
                                    its own thread with its share of the threads, longest first: what zhen's streams
                                    would give Marian (informative; not one of Marian's configurations)
  zhen-generate-fp32                ZhenForConditionalGeneration.generate (Transformers' generation loop)
  zhen-fast-{fp32,bf16,int8}        zhen's default decoding session, `zhen.fast_generation.FastDecoder(model)` (static
                                    cache, lean loop, session weights for the machine; CUDA graphs on a GPU); int8 =
                                    zhen.quantization
  zhen-fastplain-fp32               the same session with the model's own weights (`weights="plain"`)
  zhen-streams-{fp32,bf16,int8}     the default session decoding several batches at once, each in its own thread
                                    (`FastDecoder.map` with `zhen.hardware.decoding_streams`), longest batches
                                    first: what zhen.translate does
  zhen-workers-{fp32,bf16,int8}     the default session in as many spawned worker processes as zhen's streams, each with
                                    its share of the threads and its own copy of the model, longest batches first: how
                                    `zhen-translate --workers` decodes (CPU; peak memory is the parent's only)
  zhen-nographs-{fp32,bf16}         the same session without CUDA graphs (`cuda_graphs=False`): what they gain on a GPU
  zhen-unscreened-fp32              the same session without greedy search's int8-screened argmax
                                    (`screen_argmax=False`): what the screen gains (float32 sessions on a CPU)
  ct2-marian-{float32,int8}         CTranslate2 on the Marian model converted by its Transformers converter
  ct2-zhen-{float32,int8}           CTranslate2 on the zhen model converted by zhen.convert_ctranslate2
  ct2streams-zhen-{float32,int8}    the same, decoding as many batches at once as zhen's streams (CTranslate2's
                                    `inter_threads`, one intra-op share each; batches submitted asynchronously,
                                    longest first): CTranslate2's own answer to several batches on several cores

Each system runs in its own process; with `--rounds N` the systems take turns N times and each keeps its best round.
`--interleave` runs all systems in one process instead, taking turns on every slice of batches (as many batches as
zhen's decoding streams, so that stream systems decode a slice at once; the order rotating; each slice's fastest time
over `--repeat` passes and `--rounds` workers kept), so that the speed drift of a shared machine reaches every system
alike: "× Marian best, paired" is the median over slices of the ratio to Marian's best system in the same slice ("int8 ×
CTranslate2 int8, paired": zhen's int8 systems to CTranslate2's best int8 system). Peak memory is then not reported, and
Marian runs under the glibc malloc thresholds zhen's session raises for the process (fewer page faults: in Marian's
favour).
Prints a markdown table per (size, beams), then one JSON line with everything.

    python benchmarks/bench_generate.py                       # tiny and base, greedy and beam 4
    python benchmarks/bench_generate.py --sizes tiny --beams 1 --rounds 3
    python benchmarks/bench_generate.py --scaling 16,32,64,128 --sizes base --systems marian-sdpa-fp32,zhen-fast-fp32
    python benchmarks/bench_generate.py --sizes base --beams 1 --sentences 512 --batch-size 64 --interleave --repeat 2 \
        --systems marian-eager-fp32,marian-sdpa-fp32,zhen-streams-fp32   # paired turns on a drifting machine
"""

import json
import os
import statistics
import sys
import tempfile
import time
import warnings

import torch


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (  # noqa: E402
    BASELINE,
    SIZES,
    ZH,
    benchmark_parser,
    gemm_peak,
    generate_flops,
    machine_info,
    marian_model,
    peak_memory_mib,
    print_table,
    run_worker,
    source_batches,
    synchronize,
    to_device,
    zhen_model,
)


DEFAULT_SYSTEMS = (
    "marian-eager-fp32,marian-sdpa-fp32,marian-eager-bf16,marian-sdpa-bf16,marian-sdpa-int8,zhen-generate-fp32,"
    "zhen-fast-fp32,zhen-fast-bf16,zhen-fast-int8,ct2-marian-float32,ct2-marian-int8,ct2-zhen-float32,ct2-zhen-int8"
)
SESSIONS = {"fast": {}, "fastplain": dict(weights="plain"), "nographs": dict(cuda_graphs=False), "streams": {},
            "unscreened": dict(screen_argmax=False)}  # fmt: skip
MARIAN_PYTORCH = ("marian-eager-fp32", "marian-sdpa-fp32", "marian-eager-bf16", "marian-sdpa-bf16")


def build_generator(system: str, size: str, variant: str, workdir: str, device: str = "cpu"):
    """Returns `generate(batches, num_beams, new_tokens) -> [ids of each batch]` for one system."""
    family, kind, precision = system.split("-")
    torch.manual_seed(0)
    if family in ("ct2", "ct2streams"):
        from zhen.convert_ctranslate2 import CTranslate2Generator, convert
        from zhen.hardware import decoding_streams

        out = os.path.join(workdir, system)
        if kind == "zhen":
            convert(zhen_model(size, variant, dropout=0.0).eval(), out, quantization=precision, force=True)
        else:
            convert_marian(marian_model(size, dropout=0.0).eval(), out, precision)
        if family == "ct2streams":
            streams = decoding_streams(device)
            threads = dict(inter_threads=streams, intra_threads=max(1, torch.get_num_threads() // streams))
            translator = CTranslate2Generator(out, compute_type=precision, device=device, **threads)

            def submit(b, beams, n):
                return translator.generate(
                    b["input_ids"], b["attention_mask"], ZH, num_beams=beams, max_new_tokens=n, min_new_tokens=n,
                    asynchronous=True,
                )  # fmt: skip

            return longest_first(lambda batches, beams, n: [wait() for wait in [submit(b, beams, n) for b in batches]])
        translator = CTranslate2Generator(out, compute_type=precision, device=device)
        return each_batch(
            lambda b, beams, n: translator.generate(
                b["input_ids"], b["attention_mask"], ZH, num_beams=beams, max_new_tokens=n, min_new_tokens=n
            )
        )
    if family == "zhen" and kind == "workers":
        return longest_first(in_workers(size, variant, precision, device))
    attn = "sdpa" if kind in (*SESSIONS, "generate", "streams") else kind
    model = (
        marian_model(size, attn, dropout=0.0) if family == "marian" else zhen_model(size, variant, attn, 0.0)
    ).eval()
    model.to(device)
    model = in_precision(model, precision)
    if family == "zhen" and kind in SESSIONS:  # as `zhen.translate` decodes: one session for all batches
        from zhen.fast_generation import FastDecoder
        from zhen.hardware import decoding_streams

        decoder = FastDecoder(model, **SESSIONS[kind]).__enter__()  # open until this worker process ends

        def one_batch(b, beams, n):
            return decoder.generate(
                b["input_ids"], b["attention_mask"], forced_bos_token_id=ZH, num_beams=beams, max_new_tokens=n,
                min_new_tokens=n,
            )  # fmt: skip

        def all_batches(batches, beams, n):
            streams = decoding_streams(device) if kind == "streams" else 1
            return list(decoder.map(lambda b: one_batch(b, beams, n), batches, streams))

        return longest_first(all_batches) if kind == "streams" else all_batches

    def one_generate(b, beams, n):
        return model.generate(
            input_ids=b["input_ids"], attention_mask=b["attention_mask"], forced_bos_token_id=ZH, num_beams=beams,
            max_new_tokens=n, min_new_tokens=n, do_sample=False,
        )  # fmt: skip

    if kind == "streams":
        return in_threads(one_generate, device)
    return each_batch(one_generate)


def in_threads(generate, device: str):
    """`generate(batch, num_beams, new_tokens)` on `decoding_streams` batches at once, longest first, each thread with
    its share of PyTorch's threads (`zhen.fast_generation.in_streams`); outputs in the given order."""
    from zhen.fast_generation import in_streams
    from zhen.hardware import decoding_streams

    def all_batches(batches, beams, n):
        return list(in_streams(lambda b: generate(b, beams, n), batches, decoding_streams(device)))

    return longest_first(all_batches)


def in_precision(model, precision: str):
    """`model` with bf16 weights, int8 (`zhen.quantization`), or as it is (fp32)."""
    if precision == "bf16":
        return model.to(torch.bfloat16)
    if precision == "int8":
        from zhen.quantization import quantize_dynamic

        return quantize_dynamic(model)
    return model


def in_workers(size: str, variant: str, precision: str, device: str):
    """`generate(batches, num_beams, new_tokens)` in `decoding_streams` spawned worker processes, each building the
    same model (seed 0) and holding a default decoding session, as `zhen.translation_workers` does."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from zhen.hardware import decoding_streams

    count = decoding_streams(device)
    threads = max(1, torch.get_num_threads() // count)
    pool = ProcessPoolExecutor(count, mp_context=multiprocessing.get_context("spawn"), initializer=_start_worker,
                               initargs=(size, variant, precision, threads))  # fmt: skip

    def all_batches(batches, beams, n):
        return list(pool.map(_generate_in_worker, batches, [beams] * len(batches), [n] * len(batches)))

    return all_batches


_WORKER = {}


def _start_worker(size: str, variant: str, precision: str, threads: int):
    from zhen.fast_generation import FastDecoder

    warnings.simplefilter("ignore")
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    _WORKER["decoder"] = FastDecoder(in_precision(zhen_model(size, variant, "sdpa", 0.0).eval(), precision)).__enter__()


def _generate_in_worker(batch: dict, beams: int, n: int) -> torch.Tensor:
    with torch.inference_mode():
        return _WORKER["decoder"].generate(batch["input_ids"], batch["attention_mask"], forced_bos_token_id=ZH,
                                           num_beams=beams, max_new_tokens=n, min_new_tokens=n)  # fmt: skip


def longest_first(decode):
    """`decode(batches, num_beams, new_tokens)` given the batches longest first, as zhen.translate orders them (no
    stream is left alone with the longest batch at the end); outputs in the given order."""

    def all_batches(batches, beams, n):
        order = sorted(range(len(batches)), key=lambda i: -batches[i]["input_ids"].numel())
        outputs = decode([batches[i] for i in order], beams, n)
        return [output for _, output in sorted(zip(order, outputs), key=lambda pair: pair[0])]

    return all_batches


def each_batch(generate):
    """`generate(batch, num_beams, new_tokens)` applied to a list of batches in turn."""
    return lambda batches, beams, n: [generate(b, beams, n) for b in batches]


def convert_marian(model, output_dir: str, quantization: str):
    """CTranslate2's own Transformers converter (its `MarianConfig` loader) on a saved MarianMTModel. The random
    model has no SentencePiece files, so placeholder token strings stand in for its tokenizer, with `<pad>` last as
    in OPUS-MT vocabularies (the loader drops that row and starts the decoder from a zero embedding, as for them)."""
    from ctranslate2.converters import TransformersConverter

    from zhen.convert_ctranslate2 import _PlaceholderVocabulary

    vocabulary = _PlaceholderVocabulary(model.config.vocab_size)
    vocabulary.tokens[0], vocabulary.tokens[-1] = "<blank>", "<pad>"  # Marian's <pad> is its last token

    class Converter(TransformersConverter):
        def load_tokenizer(self, tokenizer_class, model_name_or_path, **kwargs):
            return vocabulary

    saved = output_dir + "-hf"
    model.save_pretrained(saved)
    Converter(saved).convert(output_dir, quantization=quantization, force=True)


def worker(job: dict) -> dict | list[dict]:
    warnings.simplefilter("ignore")
    torch.set_num_threads(job["threads"])
    device = job.get("device", "cpu")
    batches = source_batches(job["sentences"], job["batch_size"], SIZES[job["size"]]["vocab"])
    batches = [to_device(batch, device) for batch in batches]
    systems = job.get("systems", [job.get("system")])
    with tempfile.TemporaryDirectory() as workdir:
        generators = {s: build_generator(s, job["size"], job["variant"], workdir, device) for s in systems}
        with torch.inference_mode():
            if "systems" not in job:
                timing = timed(generators[job["system"]], batches, job["beams"], job["new_tokens"], device)
                return dict(job, **timing, rss_mib=peak_memory_mib(device))
            slices = timed_in_turns(generators, batches, job["beams"], job["new_tokens"], job["repeat"], device)
    return [dict(job, system=s, seconds=sum(slices[s]), slice_seconds=slices[s]) for s in systems]


def timed(generate, batches, beams: int, new_tokens: int, device: str = "cpu") -> dict:
    warm_up(generate, batches, beams, new_tokens, device)
    synchronize(device)
    start = time.perf_counter()
    generate(batches, beams, new_tokens)
    synchronize(device)
    return dict(seconds=time.perf_counter() - start)


def warm_up(generate, batches, beams: int, new_tokens: int, device: str):
    out = generate(batches[:2], beams, new_tokens)[0]  # warm-up (and packing, conversion caches)
    assert out.shape[1] == 1 + new_tokens, f"made {out.shape[1] - 1} tokens instead of {new_tokens}"
    if device != "cpu":  # GPU kernels (cuDNN attention plans, ...) are set up per shape: time the steady state
        generate(batches, beams, new_tokens)


def timed_in_turns(generators: dict, batches, beams: int, new_tokens: int, repeat: int, device: str) -> dict:
    """Each system's fastest time for each slice of batches (as many as zhen's decoding streams) over `repeat`
    passes, the systems taking turns on every slice, the order rotating, so that the machine's drift over minutes
    reaches them alike."""
    from zhen.hardware import decoding_streams

    for generate in generators.values():
        warm_up(generate, batches, beams, new_tokens, device)
    width = decoding_streams(device)
    slices = [batches[i : i + width] for i in range(0, len(batches), width)]
    names = list(generators)
    best = {name: [float("inf")] * len(slices) for name in names}
    for turn in range(repeat):
        for i, part in enumerate(slices):
            shift = (turn + i) % len(names)
            for name in names[shift:] + names[:shift]:
                synchronize(device)
                start = time.perf_counter()
                generators[name](part, beams, new_tokens)
                synchronize(device)
                best[name][i] = min(best[name][i], time.perf_counter() - start)
    return best


def run(args, size: str, beams: int, new_tokens: int, systems: list[str], peaks: dict) -> list[dict]:
    best: dict[str, dict] = {}
    job = dict(
        size=size, beams=beams, new_tokens=new_tokens, variant=args.variant, sentences=args.sentences,
        batch_size=args.batch_size, threads=args.threads, device=args.device,
    )  # fmt: skip
    for _ in range(args.rounds):
        if args.interleave:
            results = run_worker(__file__, dict(job, systems=systems, repeat=args.repeat))
            results = results if isinstance(results, list) else [dict(results, system=s) for s in systems]
        else:
            results = [run_worker(__file__, dict(job, system=s), baseline_tree=args.baseline_tree) for s in systems]
        for result in results:
            kept = best.get(result["system"])
            if kept is not None and "slice_seconds" in kept and "slice_seconds" in result:  # each slice's best
                slices = [min(pair) for pair in zip(kept["slice_seconds"], result["slice_seconds"])]
                result = dict(result, slice_seconds=slices, seconds=sum(slices))
            if kept is None or "error" in kept or ("error" not in result and result["seconds"] < kept["seconds"]):
                best[result["system"]] = result
    rows = [best[s] for s in systems]
    batches = source_batches(args.sentences, args.batch_size, SIZES[size]["vocab"])  # the workers' batches
    shapes = [batch["input_ids"].shape for batch in batches]
    flops = sum(generate_flops(size, length, batch, beams, new_tokens) for batch, length in shapes)
    for r in rows:
        if "error" not in r:
            r["sent_s"] = r["sentences"] / r["seconds"]
            r["tok_s"] = r["sentences"] * r["new_tokens"] / r["seconds"]
            r["gflop_s"] = flops / r["seconds"] / 1e9
            r["share_fp32"], r["share_bf16"] = (r["gflop_s"] * 1e9 / peaks[name] for name in ("fp32", "bf16"))
    ok = {r["system"]: r for r in rows if "error" not in r}
    baseline = ok.get("marian-eager-fp32")
    marian_best = max((ok[s] for s in MARIAN_PYTORCH if s in ok), key=lambda r: r["tok_s"], default=None)
    ct2_int8 = [r for s, r in ok.items() if s.startswith("ct2") and s.endswith("-int8")]
    ct2_int8_best = max(ct2_int8, key=lambda r: r["tok_s"], default=None)
    for r in rows:
        if "error" in r:
            continue
        r["x_marian_eager"] = r["tok_s"] / baseline["tok_s"] if baseline else None
        r["x_marian_best"] = r["tok_s"] / marian_best["tok_s"] if marian_best else None
        r["x_marian_best_paired"] = paired_ratio(r, marian_best)
        if ct2_int8_best and r["system"].startswith("zhen") and r["system"].endswith("-int8"):
            r["x_ct2_int8_best"] = r["tok_s"] / ct2_int8_best["tok_s"]
            r["x_ct2_int8_best_paired"] = paired_ratio(r, ct2_int8_best)
    return rows


def paired_ratio(row: dict, peer: dict | None) -> float | None:
    """With `--interleave`: the median over slices of `peer`'s seconds over `row`'s in the same slice."""
    if peer is None or "slice_seconds" not in row or "slice_seconds" not in peer:
        return None
    return statistics.median(theirs / own for theirs, own in zip(peer["slice_seconds"], row["slice_seconds"]))


def main(argv=None):
    parser = benchmark_parser(__doc__, "cpu, or cuda (int8 and CTranslate2 systems are CPU-only here)")
    parser.add_argument("--beams", default="1,4")
    parser.add_argument("--systems", default=DEFAULT_SYSTEMS)
    parser.add_argument("--variant", default="prenorm", choices=["prenorm", "postnorm"], help="zhen variant")
    parser.add_argument("--sentences", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--scaling", help="comma-separated output lengths: time against output length instead")
    parser.add_argument(
        "--interleave", action="store_true", help="all systems in one process, taking turns slice by slice of batches"
        " (no per-system peak memory): the ratios then do not depend on how the machine's speed drifts between turns",
    )  # fmt: skip
    parser.add_argument("--repeat", type=int, default=1, help="--interleave: N passes, each slice's best kept")
    args = parser.parse_args(argv)
    if args.interleave and args.baseline_tree:
        parser.error("--baseline-tree runs each revision in its own process: leave out --interleave")
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))))
        return
    systems = args.systems.split(",")
    if args.baseline_tree:
        systems += [s + BASELINE for s in systems if s.startswith("zhen")]
    torch.set_num_threads(args.threads)
    peaks = {
        name: gemm_peak(dtype, device=args.device)
        for name, dtype in (("fp32", torch.float32), ("bf16", torch.bfloat16))
    }
    info = dict(machine_info(args.device), gemm_gflop_s={name: round(peak / 1e9, 1) for name, peak in peaks.items()})
    print(f"# bench_generate  {info}  zhen variant: {args.variant}", flush=True)
    results = []
    lengths = [int(n) for n in args.scaling.split(",")] if args.scaling else [args.new_tokens]
    for size in args.sizes.split(","):
        for beams in [int(b) for b in args.beams.split(",")]:
            for new_tokens in lengths:
                rows = run(args, size, beams, new_tokens, systems, peaks)
                print(f"\n## {size}, {'greedy' if beams == 1 else f'beam {beams}'}, {new_tokens} new tokens, "
                      f"{args.sentences} sentences in batches of {args.batch_size}")  # fmt: skip
                print_table(
                    rows,
                    [("system", "system", "s"), ("seconds", "seconds", ".2f"), ("sent_s", "sent/s", ".1f"),
                     ("tok_s", "tok/s", ".0f"),
                     ("x_marian_eager", "× Marian eager fp32", ".2f"), ("x_marian_best", "× Marian best", ".2f"),
                     ("x_marian_best_paired", "× Marian best, paired", ".2f"),
                     ("x_ct2_int8_best", "int8 × CTranslate2 int8", ".2f"),
                     ("x_ct2_int8_best_paired", "int8 × CTranslate2 int8, paired", ".2f"),
                     ("gflop_s", "GFLOP/s", ".1f"),
                     ("share_fp32", "% fp32 GEMM peak", ".0%"),
                     ("share_bf16", "% bf16 GEMM peak", ".0%"), ("rss_mib", "peak mem MiB", ".0f"),
                     ("error", "error", "s")],
                )  # fmt: skip
                results += rows
    info["load1_end"] = round(os.getloadavg()[0], 2)
    print(json.dumps(dict(benchmark="generate", machine=info, results=results)))


if __name__ == "__main__":
    main()
