# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""Shared pieces of the zhen benchmarks: model sizes, zhen and Marian models of equal size, synthetic batches with a
realistic length mix, the machine's GEMM peak, peak memory, and a table printer.

Every benchmark runs each configuration in a fresh worker process (`python SCRIPT --worker JSON`), so that peak RSS is
that configuration's own and one system's allocator state cannot slow the next; the parent interleaves the systems
over `--rounds` and keeps each one's best round, the usual defence against a machine shared with other jobs.
"""

import argparse
import importlib.util
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import torch

from zhen import fast_generation, hardware


# The benchmarks time zhen's steady state: a model's layers' programs compiled by TorchScript from its first call,
# as a model has them after its first seconds of decoding (`zhen.fast_generation.SCRIPT_AFTER_SECONDS`).
fast_generation.SCRIPT_AFTER_SECONDS = 0.0

SIZES = {
    "tiny": dict(d_model=256, heads=4, ffn=1024, layers=3, vocab=16000),
    "base": dict(d_model=512, heads=8, ffn=2048, layers=6, vocab=32000),
}
# zhen variants: its default (pre-norm, sinusoidal) and the one built like Marian (post-norm, sinusoidal).
VARIANTS = {"prenorm": dict(normalize_before=True), "postnorm": dict(normalize_before=False)}
PAD, BOS, EOS, EN, ZH = 0, 1, 2, 4, 5
MAX_POSITIONS = 512


def module_at(commit: str, path: str, name: str):
    """The module a file of zhen (`path`, e.g. "zhen/packing.py") was at `commit`, loaded beside the installed zhen
    as `name`, for A/B comparisons of code in one process. A module that registers something on import (an
    attention function) is loaded without that line."""
    source = subprocess.run(["git", "show", f"{commit}:{path}"], capture_output=True, text=True, check=True,
                            cwd=os.path.dirname(os.path.abspath(__file__))).stdout  # fmt: skip
    source = source.replace("from . import", "from zhen import").replace("from .", "from zhen.")
    source = source.replace("register_attention(PACKED_ATTENTION, packed_sdpa_attention)", "")
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as file:
        file.write(source)
    spec = importlib.util.spec_from_file_location(name, file.name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def medians_in_turns(parts: dict, rounds: int) -> dict:
    """Each callable of `parts` timed once a round, taking turns, for `rounds` rounds: name -> median seconds."""
    times = {name: [] for name in parts}
    for _ in range(rounds):
        for name, part in parts.items():
            start = time.perf_counter()
            part()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(seconds) for name, seconds in times.items()}


def steps_in_turns(versions: dict, use, step, batches: list, rounds: int) -> dict:
    """`step(batch)` under each of `versions` (`use(version)` switches to it), taking turns batch by batch, each
    version first in every other round, after a warm-up round: name -> seconds of each step, aligned across names so
    that the i-th of two names are a pair."""
    times = {name: [] for name in versions}
    for round_ in range(rounds + 1):
        for batch in batches:
            for name, version in list(versions.items())[:: 1 if round_ % 2 else -1]:
                use(version)
                start = time.perf_counter()
                step(batch)
                if round_:
                    times[name].append(time.perf_counter() - start)
    return times


def zhen_model(size: str, variant: str = "prenorm", attn: str = "sdpa", dropout: float = 0.1, **overrides):
    from zhen import ZhenConfig, ZhenForConditionalGeneration

    s = SIZES[size]
    config = ZhenConfig(
        vocab_size=s["vocab"], d_model=s["d_model"], encoder_layers=s["layers"], decoder_layers=s["layers"],
        encoder_attention_heads=s["heads"], decoder_attention_heads=s["heads"], encoder_ffn_dim=s["ffn"],
        decoder_ffn_dim=s["ffn"], max_position_embeddings=MAX_POSITIONS, dropout=dropout, label_smoothing=0.1,
        **{**VARIANTS[variant], **overrides},
    )  # fmt: skip
    return ZhenForConditionalGeneration._from_config(config, attn_implementation=attn)


def marian_model(size: str, attn: str = "sdpa", dropout: float = 0.1):
    """MarianMTModel of the same size as zhen's post-norm sinusoidal variant: same activation (ReLU), tied shared
    embeddings, scaled embeddings, the same special-token ids."""
    from transformers import MarianConfig, MarianMTModel

    s = SIZES[size]
    config = MarianConfig(
        vocab_size=s["vocab"], decoder_vocab_size=s["vocab"], d_model=s["d_model"], encoder_layers=s["layers"],
        decoder_layers=s["layers"], encoder_attention_heads=s["heads"], decoder_attention_heads=s["heads"],
        encoder_ffn_dim=s["ffn"], decoder_ffn_dim=s["ffn"], activation_function="relu", dropout=dropout,
        attention_dropout=0.0, activation_dropout=0.0, max_position_embeddings=MAX_POSITIONS, scale_embedding=True,
        share_encoder_decoder_embeddings=True, tie_word_embeddings=True, pad_token_id=PAD, eos_token_id=EOS,
        bos_token_id=BOS, decoder_start_token_id=BOS, forced_eos_token_id=None,
    )  # fmt: skip
    return MarianMTModel._from_config(config, attn_implementation=attn)


# --- synthetic data -------------------------------------------------------------------------------------------------


def sentence_lengths(n: int, generator: torch.Generator, median: float = 22.0, cap: int = 160) -> torch.Tensor:
    """Subword lengths of real en/zh sentences are roughly log-normal: median ~22, a long tail past 100."""
    lengths = torch.exp(math.log(median) + 0.6 * torch.randn(n, generator=generator))
    return lengths.round().clamp(3, cap).long()


def synthetic_pairs(n: int, vocab: int, seed: int = 0) -> list[tuple[list[int], list[int]]]:
    """`n` (source, target) id lists: `__en__ w1 .. wn </s>` and `__zh__ v1 .. vm </s>`, with target/source length
    ratios spread around 1."""
    g = torch.Generator().manual_seed(seed)
    src_len = sentence_lengths(n, g)
    tgt_len = (src_len * torch.exp(0.2 * torch.randn(n, generator=g))).round().clamp(2, 160).long()
    pairs = []
    for s, t in zip(src_len.tolist(), tgt_len.tolist()):
        src = [EN] + torch.randint(6, vocab - 1, (s,), generator=g).tolist() + [EOS]
        tgt = [ZH] + torch.randint(6, vocab - 1, (t,), generator=g).tolist() + [EOS]
        pairs.append((src, tgt))
    return pairs


def pad(rows: list[list[int]], value: int, multiple: int = 1) -> torch.Tensor:
    width = -(-max(map(len, rows)) // multiple) * multiple
    return torch.tensor([r + [value] * (width - len(r)) for r in rows])


def token_batches(pairs, max_tokens: int = 4096, sort_window: int = 100, multiple: int = 1) -> list[dict]:
    """fairseq/Marian-style token-budget batches: windows of `sort_window` batches are sorted by length and cut so that
    the padded target tensor holds at most `max_tokens` tokens. Widths are padded to a multiple of 8, as sockeye and
    fairseq do. Returns dicts of `input_ids`, `attention_mask`, `decoder_input_ids`, `labels` (-100 on padding)."""
    batches, i, window = [], 0, sort_window * max(1, max_tokens // 30)
    while i < len(pairs):
        chunk = sorted(pairs[i : i + window], key=lambda p: (len(p[1]), len(p[0])))
        i += window
        start = 0
        while start < len(chunk):
            end = start + 1
            while end < len(chunk) and (end + 1 - start) * -(-len(chunk[end][1]) // multiple) * multiple <= max_tokens:
                end += 1
            rows = chunk[start:end]
            start = end
            input_ids = pad([s for s, _ in rows], PAD, multiple)
            labels = pad([t for _, t in rows], -100, multiple)
            decoder_input_ids = _shift(labels)
            batches.append(
                dict(
                    input_ids=input_ids,
                    attention_mask=input_ids.ne(PAD).long(),
                    decoder_input_ids=decoder_input_ids,
                    labels=labels,
                )
            )
    return batches


def _shift(labels: torch.Tensor) -> torch.Tensor:
    shifted = torch.cat([torch.full((len(labels), 1), BOS), labels[:, :-1]], 1)
    return shifted.masked_fill(shifted == -100, PAD)


def batch_stats(batch: dict) -> dict:
    real_src, real_tgt = int(batch["attention_mask"].sum()), int(batch["labels"].ne(-100).sum())
    padded = batch["input_ids"].numel() + batch["labels"].numel()
    return dict(
        tgt_tokens=real_tgt, src_tokens=real_src, padded_tokens=padded, padding=1 - (real_src + real_tgt) / padded
    )


def source_batches(n: int, batch_size: int, vocab: int, seed: int = 1) -> list[dict]:
    """`n` source sentences sorted by length (as a translation front end does) in batches of `batch_size`."""
    sources = sorted((s for s, _ in synthetic_pairs(n, vocab, seed)), key=len)
    out = []
    for i in range(0, n, batch_size):
        rows = sources[i : i + batch_size]
        input_ids = pad(rows, PAD, multiple=1)
        out.append(dict(input_ids=input_ids, attention_mask=input_ids.ne(PAD).long(), tokens=rows))
    return out


# --- FLOPs, GEMM peak, memory ---------------------------------------------------------------------------------------


def train_flops(size: str, batch: dict) -> float:
    """Matmul FLOPs of one training step (forward + backward = 3x forward) on the padded batch: every Linear, the LM
    head, and the two attention matmuls (QK^T, AV) of each attention layer. Norms, softmax and the optimizer are not
    counted, as in the usual 6ND estimate."""
    s = SIZES[size]
    d, f, L, V = s["d_model"], s["ffn"], s["layers"], s["vocab"]
    B, S = batch["input_ids"].shape
    T = batch["labels"].shape[1]
    enc = B * S * (2 * 4 * d * d + 2 * 2 * d * f) + B * 2 * 2 * S * S * d
    dec = B * T * (2 * 4 * d * d + 2 * 2 * d * f + 2 * 2 * d * d) + B * 2 * 2 * T * S * d + B * 2 * 2 * T * T * d
    dec += B * 2 * S * 2 * d * d  # cross-attention keys and values of the source
    head = B * T * 2 * d * V
    return 3.0 * (L * (enc + dec) + head)


def generate_flops(size: str, source_length: int, rows: int, beams: int, new_tokens: int) -> float:
    """Matmul FLOPs of translating one batch of `rows` sentences of `source_length` (padded) tokens into `new_tokens`
    tokens with `beams` beams: the encoder once, the source's cross-attention keys and values once per sentence, then
    per generated token and beam every decoder projection, the attention products over the history and the source,
    and the LM head (counted for every step, as a plain decoder runs it)."""
    s = SIZES[size]
    d, f, L, V = s["d_model"], s["ffn"], s["layers"], s["vocab"]
    S, T = source_length, new_tokens
    encoder = rows * S * L * (2 * 4 * d * d + 2 * 2 * d * f + 2 * 2 * S * d)
    source_keys_values = rows * S * L * 2 * 2 * d * d
    history = T * (T + 1) // 2  # self-attention over 1, 2, ..., T positions
    per_row = T * L * (2 * 6 * d * d + 2 * 2 * d * f + 2 * 2 * S * d) + L * 2 * 2 * history * d + T * 2 * d * V
    return float(encoder + source_keys_values + rows * beams * per_row)


def gemm_peak(dtype: torch.dtype, n: int = 2048, seconds: float = 2.0, device: str = "cpu") -> float:
    """FLOP/s of an n x n x n matmul in `dtype` on this machine, now (best of several). On a CPU, the faster of
    PyTorch's matmul (MKL's for float32 on x86) and oneDNN's product of the same operands (bf16 only where oneDNN
    packs bf16: `zhen.hardware`'s `onednn_bf16`): on AMD CPUs MKL's float32 is far slower than oneDNN's, which zhen's
    decoding uses. On a GPU n is 8192, the size at which its tensor cores reach their rate."""
    return gemm_rate(dtype, n, device)(seconds)


def gemm_rate(dtype: torch.dtype, n: int = 2048, device: str = "cpu"):
    """[`gemm_peak`] as a function of the seconds to spend measuring, its operands made once: to measure the peak
    again and again, in turns with what it is compared with."""
    n = 8192 if device != "cpu" else n
    a, b = torch.randn(n, n, dtype=dtype, device=device), torch.randn(n, n, dtype=dtype, device=device)
    products = [lambda: a @ b]
    onednn_packs = hardware.detected().packs_bf16() if dtype == torch.bfloat16 else torch.backends.mkldnn.is_available()
    if device == "cpu" and onednn_packs:
        weight = torch.ops.mkldnn._reorder_linear_weight(b.t().contiguous(), None)  # a @ b = linear(a, bᵀ)
        products.append(lambda: torch.ops.mkldnn._linear_pointwise(a, weight, None, "none", [], ""))
    return lambda seconds: max(_best_rate(product, 2 * n**3, seconds / len(products), device) for product in products)


def _best_rate(product, flops: float, seconds: float, device: str) -> float:
    start = time.perf_counter()
    product()
    synchronize(device)
    if time.perf_counter() - start > seconds:  # one call outlasts the time given (bf16 without bf16 kernels: AVX2)
        return flops / (time.perf_counter() - start)
    best, start = float("inf"), time.perf_counter()
    while time.perf_counter() - start < seconds:
        t = time.perf_counter()
        product()
        synchronize(device)
        best = min(best, time.perf_counter() - t)
    return flops / best


def synchronize(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def to_device(batch: dict, device: str) -> dict:
    return {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in batch.items()}


def peak_memory_mib(device: str = "cpu") -> float:
    """Peak resident memory of this process, or peak GPU memory allocated on a GPU."""
    if device.startswith("cuda"):
        return torch.cuda.max_memory_allocated() / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def machine_info(device: str = "cpu") -> dict:
    load = os.getloadavg()[0]
    info = dict(torch=torch.__version__, threads=torch.get_num_threads(), cpus=os.cpu_count(), load1=round(load, 2))
    if device.startswith("cuda"):
        info["gpu"] = torch.cuda.get_device_name()
    return info


# --- workers and tables ---------------------------------------------------------------------------------------------


def benchmark_parser(doc: str, device_help: str) -> argparse.ArgumentParser:
    """The options every benchmark has: sizes, rounds, threads, device, and the hidden worker entry."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--sizes", default="tiny,base")
    parser.add_argument("--rounds", type=int, default=1, help="let the systems take turns N times, keep each best")
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--device", default="cpu", help=device_help)
    parser.add_argument(
        "--baseline-tree", help="another checkout of zhen: each zhen system also runs from it, as SYSTEM@base"
    )
    return parser


def checkpoint_parser(doc: str, systems, limit: int) -> argparse.ArgumentParser:
    """The options of the benchmarks that translate a test set with a trained checkpoint."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="trained zhen checkpoint folder (with its tokenizer)")
    parser.add_argument("--test", required=True, help="parallel file (JSON Lines/TSV/Parquet with en and zh)")
    parser.add_argument("--directions", default="en-zh,zh-en")
    parser.add_argument("--num-beams", default="1,4")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--limit", type=int, default=limit)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--systems", default=",".join(systems))
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    return parser


BASELINE = "@base"  # suffix of a system run from the `--baseline-tree` checkout (another revision of zhen)


def run_worker(script: str, job: dict, timeout: float = 3600, baseline_tree: str | None = None) -> dict:
    """Run `script --worker JSON` in a fresh interpreter and return the JSON it prints last. A system named
    `...@base` runs the same script of `baseline_tree` (another checkout of zhen) with that checkout's package, so that
    two revisions are measured in one run, taking turns on the same machine."""
    env, system = None, job.get("system", "")
    if system.endswith(BASELINE):
        script = os.path.join(baseline_tree, "benchmarks", os.path.basename(script))
        env = dict(os.environ, PYTHONPATH=os.path.abspath(baseline_tree))
        job = dict(job, system=system.removesuffix(BASELINE))
    out = subprocess.run(
        [sys.executable, script, "--worker", json.dumps(job)], capture_output=True, text=True, timeout=timeout, env=env
    )
    if out.returncode:
        sys.stderr.write(out.stderr[-4000:])
        return dict(job, error=out.stderr.strip().splitlines()[-1] if out.stderr.strip() else f"rc {out.returncode}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    return dict(result, system=system) if system.endswith(BASELINE) else result


def print_table(rows: list[dict], columns: list[tuple[str, str, str]]):
    """`columns`: (key, header, format). Prints a GitHub-markdown table."""
    cells = [[h for _, h, _ in columns]]
    for r in rows:
        cells.append([("" if r.get(k) is None else format(r[k], f)) if k in r else "" for k, _, f in columns])
    widths = [max(len(c[i]) for c in cells) for i in range(len(columns))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(row, widths)) + " |" for row in cells]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    print("\n".join(lines), flush=True)


# --- equal-shape Marian from a zhen config, and the CPU's identity (bench_quality.py) --------------------------------


def marian_config_like(zhen_config, **overrides):
    """`MarianConfig` with the shape of a `ZhenConfig` (width, depth of each stack, heads, FFN, vocabulary, position
    table, activation, dropouts, scaled tied embeddings) and its special-token ids. Marian is always post-norm with
    sinusoidal positions; what of zhen's config Marian cannot express is listed by `marian_differences`. Marian's own
    defaults stay for everything else (e.g. `init_std`)."""
    from transformers import MarianConfig

    z = zhen_config
    values = dict(
        vocab_size=z.vocab_size, decoder_vocab_size=z.vocab_size, d_model=z.d_model, encoder_layers=z.encoder_layers,
        decoder_layers=z.decoder_layers, encoder_attention_heads=z.encoder_attention_heads,
        decoder_attention_heads=z.decoder_attention_heads, encoder_ffn_dim=z.encoder_ffn_dim,
        decoder_ffn_dim=z.decoder_ffn_dim, activation_function=z.activation_function, dropout=z.dropout,
        attention_dropout=z.attention_dropout, activation_dropout=z.activation_dropout,
        max_position_embeddings=z.max_position_embeddings, scale_embedding=z.scale_embedding,
        share_encoder_decoder_embeddings=True, tie_word_embeddings=True, pad_token_id=z.pad_token_id,
        eos_token_id=z.eos_token_id, bos_token_id=z.bos_token_id, decoder_start_token_id=z.decoder_start_token_id,
        forced_eos_token_id=None,
    )  # fmt: skip
    return MarianConfig(**{**values, **overrides})


def marian_differences(zhen_config) -> list[str]:
    """How a zhen config differs from the Marian built by `marian_config_like` (architecture, not training)."""
    z, out = zhen_config, []
    if z.normalize_before:
        out.append("zhen pre-norm, Marian post-norm")
    if z.position_embedding_type != "sinusoidal":
        out.append(f"zhen {z.position_embedding_type} positions, Marian sinusoidal")
    if not z.tie_word_embeddings:
        out.append("zhen untied embeddings, Marian tied")
    if z.init_std != 0.02:
        out.append(f"zhen init_std {z.init_std}, Marian 0.02 (its default)")
    return out


def cpu_description() -> dict:
    """The CPU model and the instruction-set flags that decide bf16 speed, from /proc/cpuinfo (what `lscpu` reads)."""
    import platform

    model, flags = platform.processor() or platform.machine(), set()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and value.strip():
                    model = value.strip()
                elif key.strip() == "flags":
                    flags = set(value.split())
    except OSError:
        pass
    wanted = ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_tile", "amx_bf16")
    return dict(cpu=model, cpus=os.cpu_count(), flags={flag: flag in flags for flag in wanted})
