# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""What the machine can do, decided in one place.

Every hardware-dependent branch of zhen (bf16 arithmetic native or emulated on the CPU, MKL weight packing for
decoding, CUDA) asks [`current`] instead of probing the machine itself, so a test can force each branch on any machine
with [`forced`], and a user can with the environment variable `ZHEN_HARDWARE`, e.g.
`ZHEN_HARDWARE=cpu_bf16=emulated,mkl_packing=off,onednn_packing=off,onednn_bf16=off,mkl_few_rows=off,fbgemm=off,`
`glibc_malloc=off,onednn_int8=off,amx_int8=off,int8_full_range=off,int8_matmul=off` (one variable, the fields
separated by commas).

`zhen-env` prints what zhen found on this machine and what it does there (`zhen.commands.env.report`).

```python
>>> from zhen import hardware
>>> hardware.current().cpu_bf16           # 'native' on AMX / AVX512-BF16 CPUs, 'emulated' elsewhere
>>> with hardware.forced(cpu_bf16="emulated"):
...     ...                               # runs the code path of a CPU without bf16 instructions
```
"""

import contextlib
import ctypes
import dataclasses
import functools
import os
import platform
import time
import warnings
from collections.abc import Callable

import torch


CPU_BF16 = ("native", "emulated")
SWITCHES = ("on", "off")


@dataclasses.dataclass(frozen=True)
class Hardware:
    """
    Args:
        cpu_bf16 (`str`): `"native"` where the CPU multiplies bfloat16 in hardware (AMX or AVX512-BF16), `"emulated"`
            where PyTorch converts to float32 inside its kernels at about a quarter of float32's rate.
        mkl_packing (`str`): `"on"` where PyTorch's MKL can pack float32 weights once for few-row products (decoding).
        onednn_packing (`str`): `"on"` where PyTorch's oneDNN can pack weights (float32, and bf16 where `onednn_bf16`)
            once for decoding.
        onednn_bf16 (`str`): `"on"` where oneDNN multiplies bf16 with the CPU's own instructions (AVX-512 BW/VL/DQ or
            AVX-NE-CONVERT on x86, ARM's bf16), which its packed bf16 weights need. Where it is off (AVX2 CPUs such as
            AMD Zen 3), a bf16 session, forced there, multiplies its bf16 weights as they are.
        float32_packing (`str`): which packing float32 decoding weights take where PyTorch has both: `"mkl"` or
            `"onednn"`, whichever multiplies faster on this CPU, measured once ([`mkl_measured_faster`]: MKL's on
            the Intel Xeons measured so far, oneDNN's on the AMD EPYCs, where MKL runs code for older CPUs);
            `"measured"` until first asked for ([`Hardware.float32_packer`]): a session in bf16 never asks.
        float32_training (`str`): what multiplies float32 training's linear layers on the CPU, forward and input
            gradient, and the fused loss's logits: `"onednn"` on x86 CPUs other than Intel's, where MKL (PyTorch's
            matmul) runs code for older CPUs and oneDNN's products of a training step's shapes run faster (measured
            on AMD EPYCs: README, Performance; `zhen.fast_training`'s `OneDnnLinear`), `"matmul"` elsewhere.
        mkl_few_rows (`str`): `"on"` where decoding multiplies the products of a step of a sentence or two by float32
            weights as they are, through MKL (`nn.functional.linear`), rather than through a oneDNN call, which costs
            ~15 µs more (`zhen.layer_steps.few_rows`): on Intel CPUs, where MKL runs its own code for the CPU. On other
            CPUs MKL runs code for older ones, and the oneDNN products are the faster (AMD EPYC Zen 4: one text a call
            1.2-2.1x faster in bf16 and float32 sessions; measured: README, Performance).
        fbgemm (`str`): `"on"` where PyTorch has FBGEMM (x86 builds), whose weighted row sums (`embedding_bag`) take
            decoding attention's products over the cache in one pass.
        glibc_malloc (`str`): `"on"` where the process allocates with glibc's `malloc` (Linux; not where another
            allocator is preloaded), whose thresholds CPU decoding and training raise ([`keep_freed_memory`]).
        onednn_int8 (`str`): `"on"` where PyTorch's oneDNN multiplies int8 with VNNI or AMX instructions: there its
            product at the vocabulary's width beats FBGEMM's for many rows, and `zhen.quantization.quantize_dynamic`
            gives the LM head a oneDNN packing for its products of 24 rows or more (with AMX, 16; FBGEMM's is the
            faster below; measured: README, Performance).
        amx_int8 (`str`): `"on"` where oneDNN multiplies int8 in AMX tiles: there its product beats FBGEMM's for
            batches of many rows, and the int8 products of `zhen.quantization.quantize_dynamic` send those batches to
            it (`zhen.quantization.RowDispatchedLinear`).
        int8_full_range (`str`): `"on"` where the int8 products (FBGEMM's, and oneDNN's where PyTorch has it) sum
            8-bit activations by 8-bit weights exactly, as VNNI and AMX instructions do (in int32): there
            `zhen.quantization` quantizes every product's activations to all 256 levels, half the rounding error of
            PyTorch's default 7 bits. The AVX2 and AVX-512 kernels without VNNI add pairs of products in int16, which
            8-bit inputs by 8-bit weights can overflow: there the layers' weights take 7 bits and their activations 8,
            the LM head's activations 7. Measured once by a product whose sums overflow int16 pairs
            ([`int8_full_range_exact`]).
        int8_matmul (`str`): `"on"` where `torch._int_mm` multiplies int8 matrices with optimized kernels; `"off"` where
            it runs a plain loop (AVX2 CPUs without VNNI such as AMD Zen 3: 40-50x FBGEMM's time), or not at all.
            Greedy search's int8 screen (`zhen.screened_argmax`) then multiplies through FBGEMM alone. Measured once
            against float32's product of the same shape ([`int8_matmul_fast`]).
        cuda (`bool`): whether a CUDA GPU is available.
        cuda_bf16 (`bool`): whether that GPU computes in bfloat16.
    """

    cpu_bf16: str
    mkl_packing: str
    onednn_packing: str
    onednn_bf16: str
    float32_packing: str
    float32_training: str
    mkl_few_rows: str
    fbgemm: str
    glibc_malloc: str
    onednn_int8: str
    amx_int8: str
    int8_full_range: str
    int8_matmul: str
    cuda: bool
    cuda_bf16: bool

    def float32_packer(self) -> str | None:
        """What packs float32 decoding weights here: `"onednn"` or `"mkl"` (where both can, `float32_packing`,
        measured at the first time of asking), or None where neither can."""
        able = [library for library in ("onednn", "mkl") if getattr(self, f"{library}_packing") == "on"]
        return self.preferred_float32_packing() if len(able) == 2 else (able[0] if able else None)

    def preferred_float32_packing(self) -> str:
        """`float32_packing`, measured now if not yet ([`measured_float32_packing`])."""
        return measured_float32_packing() if self.float32_packing == MEASURED else self.float32_packing

    def float32_trainer(self) -> str:
        """`float32_training`, or `"matmul"` where PyTorch has no oneDNN (`onednn_packing` off)."""
        return self.float32_training if self.onednn_packing == "on" else "matmul"

    def packs_bf16(self) -> bool:
        """Whether bf16 decoding weights are packed into oneDNN's GEMM layout here (`onednn_packing`, `onednn_bf16`)."""
        return self.onednn_packing == "on" and self.onednn_bf16 == "on"

    def int8_outruns_bf16(self) -> bool:
        """Whether the CPU's int8 products outrun its bf16 ones: int8 by VNNI's kernels (8-bit sums exact,
        `int8_full_range`), bf16 natively but not in AMX tiles (AVX512-BF16 alone, as on AMD EPYC Zen 4 and Zen 5).
        There a bf16 session's greedy search screens its LM head with an int8 product (`zhen.fast_generation`'s
        `screen_argmax`; measured: README, Performance)."""
        return self.cpu_bf16 == "native" and self.int8_full_range == "on" and self.amx_int8 == "off"

    def describe(self) -> str:
        gpu = f"CUDA ({'bf16' if self.cuda_bf16 else 'no bf16'})" if self.cuda else "no CUDA GPU"
        packing = f"MKL weight packing {self.mkl_packing}, oneDNN weight packing {self.onednn_packing}"
        packing += f", oneDNN bf16 {self.onednn_bf16}"
        preferred = "MKL" if self.preferred_float32_packing() == "mkl" else "oneDNN"
        packing += f", float32 weights packed by {preferred} where both can"
        packing += f", few-row float32 products by MKL {self.mkl_few_rows}"
        packing += f", float32 training products by {'oneDNN' if self.float32_trainer() == 'onednn' else 'matmul'}"
        packing += f", FBGEMM row sums {self.fbgemm}, glibc malloc {self.glibc_malloc}"
        packing += f", oneDNN int8 LM head {self.onednn_int8}, oneDNN int8 batches {self.amx_int8}"
        packing += f", int8 full-range activations {self.int8_full_range}, int8 matmul {self.int8_matmul}"
        return f"CPU bf16 {self.cpu_bf16}, {packing}, {gpu}"


@functools.cache
def detected() -> Hardware:
    """The machine as PyTorch sees it (cached). On x86 CPUs bf16 is native where PyTorch reports AVX512-BF16 or AMX;
    elsewhere (ARM: Graviton, Ampere, Apple silicon), where PyTorch reports no such flags, it is measured."""
    checks = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")  # private; present since torch 2.3
    native = any(getattr(torch.cpu, check, lambda: False)() for check in checks)
    if not native and platform.machine().lower() not in X86:
        native = bf16_measured_faster()
    mkl = torch.backends.mkl.is_available() and hasattr(torch.ops.mkl, "_mkl_linear")
    onednn = torch.backends.mkldnn.is_available() and hasattr(torch.ops.mkldnn, "_reorder_linear_weight")
    int8_instructions = any(
        getattr(torch.cpu, check, lambda: False)() for check in ("_is_vnni_supported", "_is_amx_tile_supported")
    )
    onednn_int8 = int8_instructions and "onednn" in torch.backends.quantized.supported_engines
    amx_int8 = onednn_int8 and getattr(torch.cpu, "_is_amx_tile_supported", lambda: False)()
    cuda = torch.cuda.is_available()
    x86 = platform.machine().lower() in X86
    return Hardware(
        cpu_bf16="native" if native else "emulated",
        mkl_packing="on" if mkl else "off",
        onednn_packing="on" if onednn else "off",
        onednn_bf16="on" if onednn and torch.ops.mkldnn._is_mkldnn_bf16_supported() else "off",
        float32_packing=MEASURED if mkl and onednn else "onednn",
        float32_training="onednn" if onednn and x86 and _cpu_vendor() != "GenuineIntel" else "matmul",
        mkl_few_rows="on" if mkl and _cpu_vendor() == "GenuineIntel" else "off",
        fbgemm="on" if "fbgemm" in torch.backends.quantized.supported_engines else "off",
        glibc_malloc="on" if _mallopt() is not None else "off",
        onednn_int8="on" if onednn_int8 else "off",
        amx_int8="on" if amx_int8 else "off",
        int8_full_range="on" if int8_full_range_exact() else "off",
        int8_matmul="on" if int8_matmul_fast() else "off",
        cuda=cuda,
        cuda_bf16=cuda and torch.cuda.is_bf16_supported(),
    )


def packed_product(op: Callable, *args) -> torch.Tensor:
    """`op(*args)`, an op one of whose arguments is a weight packed in a `torch.ScriptObject` (PyTorch's int8
    products), called from Python without asking its arguments for a tensor subclass's `__torch_function__`: a
    ScriptObject answers by throwing a C++ exception, caught each call, which costs more than a product of a few rows.
    """
    with _NO_SUBCLASS_LOOKUP():
        return op(*args)


_NO_SUBCLASS_LOOKUP = getattr(torch._C, "DisableTorchFunctionSubclass", contextlib.nullcontext)


MEASURED = "measured"  # `Hardware.float32_packing` not measured yet


def int8_full_range_exact() -> bool:
    """Whether every int8 engine PyTorch has here (FBGEMM, oneDNN) multiplies 8-bit activations exactly: a product
    of inputs at the top of their range (255) by weights at the top of theirs (127), whose pairs of products overflow
    the int16 sums of kernels without VNNI (they return about half the true value, `FULL_RANGE_PROBE_WIDTH`)."""
    engines = [engine for engine in ("fbgemm", "onednn") if engine in torch.backends.quantized.supported_engines]
    return bool(engines) and all(abs(_full_range_product(engine) - FULL_RANGE_PROBE_WIDTH) < 1 for engine in engines)


FULL_RANGE_PROBE_WIDTH = 64


def _full_range_product(engine: str) -> float:
    previous = torch.backends.quantized.engine
    ones = torch.ones(1, FULL_RANGE_PROBE_WIDTH)
    try:
        torch.backends.quantized.engine = engine
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # PyTorch announces the move of quantized tensors to torchao
            weight = torch.quantize_per_tensor(ones, 1 / 127, 0, torch.qint8)
        packed = torch.ops.quantized.linear_prepack(weight, None)
        return torch.ops.quantized.linear_dynamic(ones, packed, reduce_range=False).item()
    finally:
        torch.backends.quantized.engine = previous


INT8_MATMUL_PROBE = (32, 256, 1024)  # rows, width, outputs: ~7 ms in a plain loop
INT8_MATMUL_SLOWDOWN = 5  # a plain loop takes ~25x float32's time at this shape (AMD Zen 3), optimized kernels ~1x


def int8_matmul_fast() -> bool:
    """Whether `torch._int_mm` runs within `INT8_MATMUL_SLOWDOWN` times float32's product of the same shape (best of
    three each; ~30 ms where it runs a plain loop, once per process); False where it does not run at all."""
    rows, width, outputs = INT8_MATMUL_PROBE
    x, weight = torch.randn(rows, width), torch.randn(width, outputs)
    x8, weight8 = x.to(torch.int8), weight.to(torch.int8)
    try:
        int8_seconds = _best_seconds(lambda: torch._int_mm(x8, weight8), 3)
    except (RuntimeError, AttributeError, NotImplementedError):
        return False
    return int8_seconds < INT8_MATMUL_SLOWDOWN * _best_seconds(lambda: x @ weight, 3)


@functools.cache
def measured_float32_packing() -> str:
    """The faster packing of float32 decoding weights where PyTorch has both ([`mkl_measured_faster`]), measured the
    first time a float32 session or `zhen-env` asks (~25-40 ms, once per process)."""
    return "mkl" if mkl_measured_faster() else "onednn"


X86 = ("x86_64", "amd64", "i386", "i686")
BF16_SPEEDUP = 1.5  # a bf16 product this much faster than float32's counts as native (emulated runs ~4x slower)


def bf16_measured_faster() -> bool:
    """Whether a bf16 product of decoding and training shapes runs `BF16_SPEEDUP` times faster than float32 here."""
    return gemm_seconds(torch.bfloat16) * BF16_SPEEDUP <= gemm_seconds(torch.float32)


def gemm_seconds(dtype: torch.dtype, repeats: int = 5) -> float:
    """The best time of a (256 x 1024) @ (1024 x 1024) product in `dtype` on the CPU (~0.5 GFLOP)."""
    a, b = torch.randn(256, 1024, dtype=dtype), torch.randn(1024, 1024, dtype=dtype)
    return _best_seconds(lambda: a @ b, repeats)


# Decoding's float32 products: a step of a few rows and one of a batch, (rows, in, out) (transformer-base's MLP).
PACKING_PROBES = ((4, 512, 2048), (32, 512, 2048))


def mkl_measured_faster(repeats: int = 5) -> bool:
    """Whether float32 products of decoding's shapes (`PACKING_PROBES`) by a weight packed by MKL take clearly less
    time (`MKL_MARGIN`) than by one packed by oneDNN here (~25 ms, once per process)."""
    times = [packed_product_seconds(*shape, repeats) for shape in PACKING_PROBES]
    return sum(mkl for mkl, _ in times) * MKL_MARGIN < sum(onednn for _, onednn in times)


# How much faster MKL must measure to be chosen: where the two are close, the choice (and float32 rounding with it)
# should not change from run to run.
MKL_MARGIN = 1.1


def packed_product_seconds(rows: int, inputs: int, outputs: int, repeats: int = 5) -> tuple[float, float]:
    """The best times of a float32 `(rows, inputs) x (inputs, outputs)` product by a weight packed by MKL and by
    oneDNN."""
    generator = torch.Generator().manual_seed(0)
    x, weight = torch.randn(rows, inputs, generator=generator), torch.randn(outputs, inputs, generator=generator)
    mkl = torch.ops.mkl._mkl_reorder_linear_weight(weight, MKL_PACKED_ROWS)
    onednn = torch.ops.mkldnn._reorder_linear_weight(weight, None)
    return (
        _best_seconds(lambda: torch.ops.mkl._mkl_linear(x, mkl, weight, None, rows), repeats),
        _best_seconds(lambda: onednn_linear(x, onednn), repeats),
    )


def onednn_linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """`nn.functional.linear(x, weight, bias)` of 2-D CPU tensors, multiplied by oneDNN: `weight` as it is (training,
    whose weights change every step) or packed once by `torch.ops.mkldnn._reorder_linear_weight`."""
    return torch.ops.mkldnn._linear_pointwise(x, weight, bias, "none", [], "")


MKL_PACKED_ROWS = 256  # the rows MKL packs a weight for: packed so, it multiplies 1 to 1,000s of rows fast (README)


def _best_seconds(product, repeats: int) -> float:
    product()  # warm-up
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        product()
        best = min(best, time.perf_counter() - start)
    return best


@functools.cache
def _mallopt():
    """glibc's `mallopt`, or None where the process's C library is not glibc, or where another allocator serves
    `malloc` (tcmalloc or jemalloc in `LD_PRELOAD`): glibc's settings would not reach it."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None
    try:
        process, libc = ctypes.CDLL(None), ctypes.CDLL("libc.so.6")
        if _address(process.malloc) != _address(libc.malloc):
            return None
        return libc.mallopt
    except (OSError, AttributeError):
        return None


def _address(function) -> int | None:
    return ctypes.cast(function, ctypes.c_void_p).value


M_TRIM_THRESHOLD, M_MMAP_THRESHOLD, M_MMAP_MAX = -1, -3, -4  # mallopt's parameter numbers (malloc.h)
KEPT_BLOCK_BYTES = 32 << 20  # the largest M_MMAP_THRESHOLD glibc takes on 64-bit
KEPT_FREE_BYTES = 128 << 20
KEPT_FREE_BYTES_LARGE_BLOCKS = 1 << 30
MALLOC_VARIABLES = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_MAX_")
_kept_freed_memory: set[str] = set()


def keep_freed_memory(large_blocks: bool = False) -> bool:
    """Ask glibc's `malloc`, for the rest of the process, to serve blocks up to 32 MiB from its heap and to keep up
    to 128 MiB of freed memory there (what `MALLOC_MMAP_THRESHOLD_` and `MALLOC_TRIM_THRESHOLD_` set). Decoding on a
    CPU frees and allocates the same large tensors every step (an int8 LM head's logits: 16 MB at 128 rows); by
    default glibc often maps such a block afresh each time and the kernel zeroes its pages, thousands of page faults
    a step. `large_blocks=True` (training) serves every block from the heap (`MALLOC_MMAP_MAX_=0`) and keeps up to
    1 GiB free there: a training step's largest blocks, the tied embedding's (vocabulary, d_model) float32 gradients
    (62.5 MiB at transformer-base), are over the 32 MiB that glibc maps at most, and would be paged in afresh every
    step. Done once for each kind, where `glibc_malloc` is on and the user set none of the variables; returns whether
    it has been done."""
    kind = "large blocks" if large_blocks else "blocks"
    if kind in _kept_freed_memory:
        return True
    mallopt = _mallopt()
    if current().glibc_malloc != "on" or mallopt is None or any(v in os.environ for v in MALLOC_VARIABLES):
        return False
    if large_blocks:
        settings = [(M_MMAP_MAX, 0), (M_TRIM_THRESHOLD, KEPT_FREE_BYTES_LARGE_BLOCKS)]
    else:
        free_bytes = KEPT_FREE_BYTES_LARGE_BLOCKS if "large blocks" in _kept_freed_memory else KEPT_FREE_BYTES
        settings = [(M_MMAP_THRESHOLD, KEPT_BLOCK_BYTES), (M_TRIM_THRESHOLD, free_bytes)]
    if all([mallopt(parameter, value) for parameter, value in settings]):
        _kept_freed_memory.add(kind)
    return kind in _kept_freed_memory


_forced: list[dict] = []


def current() -> Hardware:
    """The machine zhen plans for: [`detected`], with `ZHEN_HARDWARE` and any [`forced`] values applied."""
    values = {**environment_overrides(), **{k: v for layer in _forced for k, v in layer.items()}}
    return dataclasses.replace(detected(), **values) if values else detected()


@contextlib.contextmanager
def forced(**values):
    """Plan for a machine that differs from this one in `values` (fields of [`Hardware`]) inside the block."""
    _check(values, source="forced()")
    _forced.append(values)
    try:
        yield current()
    finally:
        _forced.remove(values)


def environment_overrides() -> dict:
    """The [`Hardware`] values `ZHEN_HARDWARE` forces (`cpu_bf16=emulated,fbgemm=off`), checked."""
    text = os.environ.get("ZHEN_HARDWARE", "").strip()
    if not text:
        return {}
    values = {}
    for item in text.split(","):
        key, _, value = item.partition("=")
        key, value = key.strip(), value.strip()
        values[key] = {"true": True, "false": False}.get(value.lower(), value)
    _check(values, source="ZHEN_HARDWARE")
    return values


def _check(values: dict, source: str) -> None:
    allowed = {
        "cpu_bf16": CPU_BF16,
        "mkl_packing": SWITCHES,
        "onednn_packing": SWITCHES,
        "onednn_bf16": SWITCHES,
        "float32_packing": ("mkl", "onednn"),
        "float32_training": ("matmul", "onednn"),
        "mkl_few_rows": SWITCHES,
        "fbgemm": SWITCHES,
        "glibc_malloc": SWITCHES,
        "onednn_int8": SWITCHES,
        "amx_int8": SWITCHES,
        "int8_full_range": SWITCHES,
        "int8_matmul": SWITCHES,
        "cuda": (True, False),
        "cuda_bf16": (True, False),
    }
    for key, value in values.items():
        if key not in allowed:
            raise ValueError(f"{source}: unknown hardware field {key!r}; known fields: {sorted(allowed)}.")
        if value not in allowed[key]:
            raise ValueError(f"{source}: {key}={value!r} is invalid; choose one of {allowed[key]}.")


def training_precision(choice: str, on_cpu: bool) -> str:
    """The mixed precision a run trains in for `choice` (`auto`, `no`, `bf16`, `fp16`). `auto` is bf16 where the
    hardware computes in it (GPUs with bf16, else fp16; CPUs with AMX or AVX512-BF16) and float32 on CPUs that only
    emulate bf16, where it trains no faster (README, Performance)."""
    if choice == "fp16" and on_cpu:
        raise ValueError("mixed_precision='fp16' needs a GPU; on the CPU use 'bf16' or 'no'.")
    if choice != "auto":
        return choice
    machine = current()
    if not on_cpu:
        return "bf16" if machine.cuda_bf16 else "fp16"
    return "bf16" if machine.cpu_bf16 == "native" else "no"


def training_attention_kernel(device: torch.device | str, mixed_precision: str) -> str:
    """How zhen's packed training attends within a group of sentences: `"matmul"` (two matmuls and a softmax) for bf16
    on a CPU that computes bf16 natively, and for float32 on a CPU whose float32 training products are oneDNN's
    (`float32_training`: x86 CPUs other than Intel's), where SDPA's flash kernel is slow at sentence lengths; `"sdpa"`
    elsewhere, where it is the faster one (measured: README, Performance)."""
    if torch.device(device).type != "cpu":
        return "sdpa"
    machine = current()
    if mixed_precision == "bf16":
        return "matmul" if machine.cpu_bf16 == "native" else "sdpa"
    return "matmul" if mixed_precision == "no" and machine.float32_trainer() == "onednn" else "sdpa"


def packing_pays(device: torch.device | str) -> bool:
    """Whether packing a batch's sentences into one row of real tokens (zhen's packed training path, the fast
    decoder's encoder) beats padded batches on `device`. On a CPU it saves the arithmetic on padding (and, in
    training, the logits tensor); on a CUDA GPU the step is bound by kernel launches, and the plain model, which
    launches fewer, trains faster (measured: README, Performance)."""
    return torch.device(device).type == "cpu"


MAX_DECODING_STREAMS = 4
# Texts per batch that `zhen.translate` and the pipeline decode by default: a decoding step of a few rows costs what
# issuing its operations costs, which 64 rows share better than 32 on a CPU
# (benchmarks/results/2026-11-27-zen5-inline-layers-batch-64.md). Greedy search in a float32 or bf16 session takes up
# to `GREEDY_BATCH_SIZE` ([`zhen.fast_generation.default_batch_size`]): its products of few rows cost more than int8's,
# and half as many batches have half as many tails of few rows (benchmarks/results/2026-11-30-zen4-v.md).
DEFAULT_BATCH_SIZE = 64
GREEDY_BATCH_SIZE = 128
STREAM_BATCHES = 4


def decoding_streams(device: torch.device | str) -> int:
    """How many batches `zhen.translate` and the pipeline decode at once on `device`
    ([`zhen.fast_generation.FastDecoder.generate_batches`]): on a CPU one per PyTorch thread, at most
    `MAX_DECODING_STREAMS` (the streams share the Python interpreter), each with its share of the threads and its own
    caches; on a GPU one, which a batch already keeps busy (measured: README, Performance)."""
    if torch.device(device).type != "cpu":
        return 1
    return max(1, min(torch.get_num_threads(), MAX_DECODING_STREAMS))


READ_AHEAD_BATCHES_PER_STREAM = 4
MIN_READ_AHEAD_BATCHES = 8  # enough for sorting by length to pay off


def read_ahead_batches(streams: int) -> int:
    """How many batches of lazily read texts (a generator or dataset given to the pipeline, a file or pipe given to
    `zhen-translate`) are read ahead and translated together, longest first, by `streams` decoding streams: enough
    for each stream to take several, so that none is left alone with the longest at the end."""
    return max(MIN_READ_AHEAD_BATCHES, READ_AHEAD_BATCHES_PER_STREAM * streams)


def short_row_floats() -> int:
    """The row length below which PyTorch's CPU softmax over the last dimension runs element by element here: a
    vector register of its kernels (16 floats with AVX-512, 8 with AVX2; 0 where it is not known)."""
    capability = torch.backends.cpu.get_cpu_capability()
    return 16 if capability.startswith("AVX512") else 8 if capability == "AVX2" else 0


SHORT_ROW_FLOATS = short_row_floats()
TRANSPOSED_SOFTMAX_SCORES = 512  # fewer: transposing costs more than it saves (benchmarks/results/2026-11-30-zen4-t.md)


def row_softmax(scores: torch.Tensor, short_below: int = SHORT_ROW_FLOATS,
                least_scores: int = TRANSPOSED_SOFTMAX_SCORES) -> torch.Tensor:  # fmt: skip
    """`scores.softmax(-1, dtype=torch.float32)`. Rows shorter than `short_below` on a CPU ([`short_row_floats`]) are
    softmaxed as the columns of the transposed scores, vectorised across rows: several times faster where there are
    `least_scores` or more, the same to float32 rounding (exp's vectorised and scalar codes round apart). Compiled by
    TorchScript into zhen's decoding programs (the limits as defaults: constants there)."""
    length = scores.shape[-1]
    if length < short_below and scores.numel() >= least_scores and scores.device.type == "cpu":
        columns = scores.reshape(-1, length).t().contiguous()
        return columns.softmax(0, dtype=torch.float32).t().contiguous().view(scores.shape)
    return scores.softmax(-1, dtype=torch.float32)


def emulates_bf16(device: torch.device | str = "cpu") -> bool:
    """Whether bfloat16 products on `device` run on PyTorch's emulation (a CPU without bf16 instructions)."""
    return torch.device(device).type == "cpu" and current().cpu_bf16 == "emulated"


def autocast_dtype(device: torch.device | str) -> torch.dtype | None:
    """The dtype autocast computes in on `device` right now, or None outside autocast."""
    device_type = torch.device(device).type
    return torch.get_autocast_dtype(device_type) if torch.is_autocast_enabled(device_type) else None


def _cpu_vendor() -> str:
    """The CPU's vendor string (`GenuineIntel`, `AuthenticAMD`), or "" where /proc/cpuinfo does not say."""
    return _cpuinfo_field("vendor_id")


def _cpuinfo_field(name: str) -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.split(":", 1)[0].strip() == name:
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def cpu_name() -> str:
    """The CPU's model name, as /proc/cpuinfo or the platform gives it."""
    return _cpuinfo_field("model name") or platform.processor() or platform.machine()


__all__ = [
    "Hardware",
    "autocast_dtype",
    "cpu_name",
    "current",
    "detected",
    "emulates_bf16",
    "environment_overrides",
    "forced",
    "keep_freed_memory",
    "training_attention_kernel",
    "training_precision",
]
