"""`zhen.hardware`: one place decides every hardware-dependent branch, and each can be forced on any machine."""

import os
import platform
import shutil
import subprocess
import sys

import pytest
import torch

from zhen import ZhenConfig, ZhenForConditionalGeneration, hardware, screened_argmax
from zhen.fast_generation import FastDecoder


def test_forced_values_apply_inside_the_block_only():
    detected = hardware.detected()
    other = "emulated" if detected.cpu_bf16 == "native" else "native"
    with hardware.forced(cpu_bf16=other) as machine:
        assert machine.cpu_bf16 == hardware.current().cpu_bf16 == other
        assert hardware.emulates_bf16("cpu") == (other == "emulated")
        assert not hardware.emulates_bf16("cuda")
        with hardware.forced(mkl_packing="off"):
            assert hardware.current().mkl_packing == "off" and hardware.current().cpu_bf16 == other
    assert hardware.current() == detected


def test_environment_variable_forces_too(monkeypatch):
    monkeypatch.setenv(
        "ZHEN_HARDWARE",
        "cpu_bf16=emulated, mkl_packing=off,onednn_packing=off,cuda=false,onednn_int8=off,amx_int8=on,"
        "int8_full_range=off",
    )
    machine = hardware.current()
    assert (machine.cpu_bf16, machine.mkl_packing, machine.onednn_packing, machine.cuda) == ("emulated", "off", "off",
                                                                                            False)  # fmt: skip
    assert (machine.onednn_int8, machine.amx_int8, machine.int8_full_range) == ("off", "on", "off")
    monkeypatch.setenv("ZHEN_HARDWARE", "mkl_few_rows=off,onednn_bf16=off")
    assert (hardware.current().mkl_few_rows, hardware.current().onednn_bf16) == ("off", "off")
    monkeypatch.setenv("ZHEN_HARDWARE", "cpu_bf16=fast")
    with pytest.raises(ValueError, match=r"ZHEN_HARDWARE: cpu_bf16='fast' is invalid"):
        hardware.current()
    monkeypatch.setenv("ZHEN_HARDWARE", "gpu=yes")
    with pytest.raises(ValueError, match="unknown hardware field 'gpu'"):
        hardware.current()


@pytest.mark.skipif(hardware.detected().onednn_packing == "off", reason="this PyTorch build has no oneDNN")
def test_onednn_bf16_is_on_exactly_where_onednn_packs_a_bf16_weight():
    """oneDNN packs bf16 weights only with the CPU's bf16-capable instructions (it raises on AVX2 CPUs: Zen 3)."""
    weight = torch.randn(64, 32, dtype=torch.bfloat16)
    try:
        packed = torch.ops.mkldnn._reorder_linear_weight(weight, None)
    except RuntimeError as error:
        assert "bf16" in str(error)
        packed = None
    assert (packed is not None) == (hardware.detected().onednn_bf16 == "on")
    if packed is not None:
        x = torch.randn(3, 32, dtype=torch.bfloat16)
        product = torch.ops.mkldnn._linear_pointwise(x, packed, None, "none", [], "")
        torch.testing.assert_close(product.float(), (x.float() @ weight.float().T), atol=0.1, rtol=0.02)


@pytest.mark.parametrize("int8_ms, float32_ms, fast", [(7.0, 0.3, False), (0.3, 0.3, True), (1.4, 0.3, True)])
def test_int8_matmul_is_fast_where_it_runs_within_a_few_times_float32s_product(monkeypatch, int8_ms, float32_ms,
                                                                                fast):  # fmt: skip
    """`torch._int_mm` is a plain loop on AVX2 CPUs (Zen 3: ~25x float32's product at the probe's shape), oneDNN's
    kernels elsewhere; where it does not run at all, it is not fast either."""
    times = iter([int8_ms / 1e3, float32_ms / 1e3])
    monkeypatch.setattr(hardware, "_best_seconds", lambda product, repeats: next(times))
    assert hardware.int8_matmul_fast() == fast

    def no_int_mm(product, repeats):
        raise RuntimeError("_int_mm: not implemented")

    monkeypatch.setattr(hardware, "_best_seconds", no_int_mm)
    assert not hardware.int8_matmul_fast()


@pytest.mark.parametrize(
    "machine,on_cpu,expected",
    [
        (dict(cpu_bf16="native"), True, "bf16"),
        (dict(cpu_bf16="emulated"), True, "no"),
        (dict(cuda=True, cuda_bf16=True), False, "bf16"),
        (dict(cuda=True, cuda_bf16=False), False, "fp16"),
    ],
    ids=["cpu-native-bf16", "cpu-emulated-bf16", "gpu-bf16", "gpu-without-bf16"],
)
def test_mixed_precision_auto_follows_the_machine(machine, on_cpu, expected):
    """`auto` trains in bf16 where the hardware computes in it (on a CPU that only emulates bf16 it trains no faster
    than float32, so float32); an explicit choice is kept, and fp16 on a CPU is refused with the alternatives."""
    with hardware.forced(**machine):
        assert hardware.training_precision("auto", on_cpu=on_cpu) == expected
        assert hardware.training_precision("bf16", on_cpu=on_cpu) == "bf16"
        assert hardware.training_precision("no", on_cpu=on_cpu) == "no"
    with pytest.raises(ValueError, match="'bf16' or 'no'"):
        hardware.training_precision("fp16", on_cpu=True)


def test_zhen_env_reports_the_machine_and_what_zhen_does_there(capsys):
    from zhen.commands import env

    with hardware.forced(cpu_bf16="native", fbgemm="on", amx_int8="on", cuda=False):
        env.main([])
    out = capsys.readouterr().out
    assert "CPU bf16 native" in out and "trains in: bf16" in out and "bf16 copies of the decoder weights" in out
    assert "the decoder's layers as one program, compiled by TorchScript" in out and "screened" not in out
    assert (
        "through packed batches (attention by two matmuls and a softmax per group of sentences) and the fused loss"
        in out
    )
    assert "float32 copy" not in out
    bf16_drafted = "greedy search of 1 to 4 texts on a large decoder drafted by an int8 copy"
    assert bf16_drafted in out and "greedy and beam search" not in out
    assert f"decode {hardware.decoding_streams('cpu')} batch(es) at once" in out
    assert "torch 2." in out and "transformers 5." in out
    for int8_full_range, amx_int8 in [("on", "off"), ("off", "off"), ("on", "on")]:  # VNNI's int8 without AMX's bf16
        with hardware.forced(cpu_bf16="native", int8_full_range=int8_full_range, amx_int8=amx_int8, cuda=False):
            env.main([])
        screened = int8_full_range == "on" and amx_int8 == "off" and screened_argmax.screen_works()
        out = capsys.readouterr().out
        assert ("greedy search's next token screened by an int8 product where the LM head has 8M" in out) == screened
    for onednn_bf16 in ("on", "off"):  # off: oneDNN cannot multiply bf16 (AVX2), the bf16 copies as they are
        with hardware.forced(cpu_bf16="native", onednn_packing="on", onednn_bf16=onednn_bf16, cuda=False):
            env.main([])
        out = capsys.readouterr().out
        assert f"oneDNN bf16 {onednn_bf16}" in out and "bf16 copies of the decoder weights" in out
        assert ("bf16 copies of the decoder weights packed for oneDNN" in out) == (onednn_bf16 == "on")
    with hardware.forced(cpu_bf16="emulated", onednn_packing="on", float32_packing="onednn", cuda=False):
        env.main([])
    out = capsys.readouterr().out
    assert "float32 weights packed for oneDNN" in out and "float32 weights packed by oneDNN where both can" in out
    assert ("greedy search's next token screened by an int8 product" in out) == screened_argmax.screen_works()
    drafted = "greedy search of 1 to 4 texts and one text's beam search on a large decoder drafted by an int8 copy"
    assert (drafted in out) == (hardware.current().fbgemm == "on")
    for int8_matmul, fbgemm in [("off", "on"), ("off", "off")]:  # AVX2: FBGEMM's product alone, or none
        with hardware.forced(cpu_bf16="emulated", int8_matmul=int8_matmul, fbgemm=fbgemm, cuda=False) as machine:
            env.main([])
            screened = screened_argmax.screen_pays(machine)
        out = capsys.readouterr().out
        assert f"int8 matmul {int8_matmul}" in out and screened == (fbgemm == "on" and screened_argmax.screen_works())
        assert ("greedy search's next token screened by an int8 product" in out) == screened
    for cpu_bf16 in ("emulated", "native"):
        with hardware.forced(cpu_bf16=cpu_bf16, onednn_packing="on", fbgemm="off", cuda=False):
            env.main([])
        assert "drafted by an int8 copy" not in capsys.readouterr().out
    amx = "batches of many rows (the LM head's from 16) with oneDNN's in AMX tiles"
    for onednn_int8, fbgemm, amx_int8, kernels in [
        ("on", "on", "off", "FBGEMM's int8 kernels, the LM head's of 24 rows or more with oneDNN's, "),
        ("on", "on", "on", f"FBGEMM's int8 kernels, {amx}, "),
        ("off", "on", "off", "FBGEMM's int8 kernels, "),
        ("off", "off", "off", "PyTorch's default int8 kernels"),
    ]:
        with hardware.forced(onednn_int8=onednn_int8, fbgemm=fbgemm, amx_int8=amx_int8):
            env.main([])
        assert f"int8 (--int8, zhen.quantization) multiplies with {kernels}" in capsys.readouterr().out
    for full_range, bits in (
        ("on", "8 bits (the kernels sum them exactly)"),
        ("off", "8 bits by 7-bit weights, the LM head's to 7 bits by 8-bit weights (the kernels add pairs"),
    ):
        with hardware.forced(int8_full_range=full_range):
            env.main([])
        assert f", activations quantized to {bits}" in capsys.readouterr().out
    for machine in (dict(onednn_packing="off", mkl_packing="on"), dict(onednn_packing="on", float32_packing="mkl")):
        with hardware.forced(cpu_bf16="emulated", cuda=False, **machine):
            env.main([])
        out = capsys.readouterr().out
        assert "float32 weights packed for MKL on the CPU, the decoder's layers as one program, compiled" in out
    with hardware.forced(cpu_bf16="emulated", mkl_packing="off", onednn_packing="off", cuda=False):
        env.main([])
    out = capsys.readouterr().out
    assert "trains in: float32 (no mixed precision)" in out and "the float32 weights as they are" in out
    assert "; a model with bf16 weights through a float32 copy" in out
    with hardware.forced(cuda=True, cuda_bf16=True):
        env.main([])
    out = capsys.readouterr().out
    assert "on the GPU bf16 copies of the decoder weights, each decoder step replayed as a CUDA graph" in out
    assert "through the plain model" in out


@pytest.fixture
def fresh_detection():
    """The machine detected afresh inside the test (its measurements too), and again after it."""
    for cached in (hardware.detected, hardware.measured_float32_packing):
        cached.cache_clear()
    yield
    for cached in (hardware.detected, hardware.measured_float32_packing):
        cached.cache_clear()


@pytest.mark.parametrize("bf16_seconds,native", [(0.25, "native"), (0.9, "emulated"), (4.0, "emulated")])
def test_bf16_is_measured_where_pytorch_reports_no_cpu_flags(monkeypatch, bf16_seconds, native, fresh_detection):
    """On an ARM CPU (no AVX512-BF16/AMX flags to read) whether bf16 is native is measured: a bf16 product at least
    1.5x faster than float32's counts as native."""
    monkeypatch.setattr(hardware.platform, "machine", lambda: "aarch64")
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: False, raising=False)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: False, raising=False)
    monkeypatch.setattr(hardware, "gemm_seconds", lambda dtype: bf16_seconds if dtype == torch.bfloat16 else 1.0)
    assert hardware.detected().cpu_bf16 == native


@pytest.mark.parametrize("mkl_seconds,packing", [(0.5, "mkl"), (0.95, "onednn"), (2.0, "onednn")])
def test_the_faster_packing_of_float32_weights_is_measured_where_pytorch_has_both(
    monkeypatch, mkl_seconds, packing, fresh_detection
):
    """MKL's packing multiplies decoding's float32 products faster on Intel Xeons, oneDNN's on AMD EPYCs: measured,
    MKL chosen only where clearly faster (close timings would flip the choice from run to run)."""
    monkeypatch.setattr(hardware, "packed_product_seconds", lambda *shape, repeats=5: (mkl_seconds, 1.0))
    machine = hardware.detected()
    if "off" in (machine.mkl_packing, machine.onednn_packing):
        assert machine.float32_packing == "onednn"  # nothing to choose
    else:
        assert machine.preferred_float32_packing() == packing and machine.float32_packer() == packing


def test_the_packing_of_float32_weights_is_measured_only_when_a_float32_session_asks(monkeypatch, fresh_detection):
    """Measuring the faster float32 packing costs a process's first session tens of milliseconds: a session in bf16,
    which never packs float32 weights, does not measure; a float32 session measures once."""
    measured = []
    monkeypatch.setattr(hardware, "packed_product_seconds", lambda *shape, repeats=5: measured.append(shape) or (1, 2))
    model = ZhenForConditionalGeneration(ZhenConfig.from_preset("tiny", vocab_size=64, encoder_layers=1,
                                                                decoder_layers=1)).eval()  # fmt: skip
    if "off" in (hardware.detected().mkl_packing, hardware.detected().onednn_packing):
        pytest.skip("this PyTorch build packs float32 weights with one library only: nothing to measure")
    with hardware.forced(cpu_bf16="native"), FastDecoder(model):
        assert measured == []
    with hardware.forced(cpu_bf16="emulated"), FastDecoder(model):
        assert len(measured) == len(hardware.PACKING_PROBES)
    with hardware.forced(cpu_bf16="emulated"), FastDecoder(model):
        assert len(measured) == len(hardware.PACKING_PROBES) and hardware.current().float32_packer() == "mkl"


PACKERS = [("on", "on", "mkl", "mkl"), ("on", "on", "onednn", "onednn"), ("off", "on", "onednn", "mkl"),
           ("on", "off", "mkl", "onednn"), ("off", "off", "mkl", None)]  # fmt: skip


@pytest.mark.parametrize("onednn,mkl,preferred,packer", PACKERS)
def test_float32_weights_are_packed_by_the_preferred_library_of_those_the_build_has(onednn, mkl, preferred, packer):
    with hardware.forced(onednn_packing=onednn, mkl_packing=mkl, float32_packing=preferred):
        assert hardware.current().float32_packer() == packer


def test_packed_products_are_timed_with_both_libraries():
    if "off" in (hardware.detected().mkl_packing, hardware.detected().onednn_packing):
        pytest.skip("this PyTorch build lacks MKL or oneDNN")
    mkl, onednn = hardware.packed_product_seconds(4, 64, 96, repeats=1)
    assert 0 < mkl < 1 and 0 < onednn < 1 and isinstance(hardware.mkl_measured_faster(repeats=1), bool)


def test_bf16_measurement_times_products_in_each_dtype():
    assert 0 < hardware.gemm_seconds(torch.bfloat16, repeats=1) < 10
    assert isinstance(hardware.bf16_measured_faster(), bool)


class RecordedMallopt:
    def __init__(self, accepts: int = 1):
        self.calls, self.accepts = [], accepts

    def __call__(self, parameter: int, value: int) -> int:
        self.calls.append((parameter, value))
        return self.accepts


@pytest.fixture
def recorded_mallopt(monkeypatch):
    """glibc's `mallopt` replaced by a recorder, in a process that has not asked it anything yet."""
    monkeypatch.setattr(hardware, "_kept_freed_memory", set())
    for variable in hardware.MALLOC_VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    recorded = RecordedMallopt()
    monkeypatch.setattr(hardware, "_mallopt", lambda: recorded)
    return recorded


KEPT = [(hardware.M_MMAP_THRESHOLD, 32 << 20), (hardware.M_TRIM_THRESHOLD, 128 << 20)]


def test_glibc_malloc_is_asked_once_to_keep_freed_memory(recorded_mallopt):
    with hardware.forced(glibc_malloc="on"):
        assert hardware.keep_freed_memory() and hardware.keep_freed_memory()
    assert recorded_mallopt.calls == KEPT


def test_malloc_is_left_alone_where_off_or_where_the_user_set_it(recorded_mallopt, monkeypatch):
    with hardware.forced(glibc_malloc="off"):
        assert not hardware.keep_freed_memory()
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "0")
    with hardware.forced(glibc_malloc="on"):
        assert not hardware.keep_freed_memory()
    assert recorded_mallopt.calls == []


def test_a_refused_mallopt_is_reported(recorded_mallopt):
    recorded_mallopt.accepts = 0
    with hardware.forced(glibc_malloc="on"):
        assert not hardware.keep_freed_memory()


INTERPOSED_MALLOC = """
#include <stddef.h>
extern void *__libc_malloc(size_t size);
void *malloc(size_t size) { return __libc_malloc(size); }
"""


def glibc_mallopt_found(environment: dict) -> bool:
    code = "from zhen import hardware; print(hardware._mallopt() is not None)"
    result = subprocess.run([sys.executable, "-c", code], env=environment, capture_output=True, text=True, check=True)
    return result.stdout.split()[-1] == "True"


@pytest.mark.skipif(not (platform.system() == "Linux" and platform.libc_ver()[0] == "glibc" and shutil.which("gcc")),
                    reason="needs glibc and gcc to build an allocator to preload")  # fmt: skip
def test_glibc_malloc_is_off_where_another_allocator_is_preloaded(tmp_path):
    (tmp_path / "malloc.c").write_text(INTERPOSED_MALLOC)
    library = tmp_path / "libmalloc.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(library), str(tmp_path / "malloc.c")], check=True)
    environment = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    assert glibc_mallopt_found(environment)
    assert not glibc_mallopt_found({**environment, "LD_PRELOAD": str(library)})


@pytest.mark.parametrize("glibc_malloc", ["on", "off"])
def test_a_cpu_decoding_session_keeps_freed_memory_where_glibc_malloc_is_on(recorded_mallopt, tiny_model,
                                                                             glibc_malloc):  # fmt: skip
    from zhen.fast_generation import FastDecoder

    with hardware.forced(glibc_malloc=glibc_malloc), FastDecoder(tiny_model):
        pass
    assert recorded_mallopt.calls == (KEPT if glibc_malloc == "on" else [])


KEPT_LARGE_BLOCKS = [(hardware.M_MMAP_MAX, 0), (hardware.M_TRIM_THRESHOLD, 1 << 30)]


def test_large_blocks_are_served_from_the_heap_and_decoding_keeps_the_larger_trim(recorded_mallopt):
    with hardware.forced(glibc_malloc="on"):
        assert hardware.keep_freed_memory(large_blocks=True) and hardware.keep_freed_memory(large_blocks=True)
        assert hardware.keep_freed_memory()
    assert recorded_mallopt.calls == [*KEPT_LARGE_BLOCKS, (hardware.M_MMAP_THRESHOLD, 32 << 20), KEPT_LARGE_BLOCKS[1]]


@pytest.mark.parametrize("glibc_malloc", ["on", "off"])
@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_cpu_training_serves_large_blocks_from_the_heap_where_glibc_malloc_is_on(recorded_mallopt, tiny_model,
                                                                                glibc_malloc, device):  # fmt: skip
    from zhen.fast_training import FastTraining

    with hardware.forced(glibc_malloc=glibc_malloc):
        FastTraining(tiny_model, device=device, cuda_graphs=False).remove()
    assert recorded_mallopt.calls == (KEPT_LARGE_BLOCKS if glibc_malloc == "on" and device == "cpu" else [])


def printed_with_and_without_kept_memory(run_fresh_python, code: str, kept_runs: int = 1) -> dict[str, int]:
    """The number `code` prints, run in a fresh process with zhen's malloc values ("kept", where `sys.argv[1]` says
    so; the least of `kept_runs` runs) and with glibc's defaults ("default"), neither with the user's malloc
    variables."""
    env = {k: v for k, v in os.environ.items() if k not in (*hardware.MALLOC_VARIABLES, "ZHEN_HARDWARE")}
    printed = {}
    for malloc in ("kept", "default"):
        forced = {} if malloc == "kept" else {"ZHEN_HARDWARE": "glibc_malloc=off"}
        runs = kept_runs if malloc == "kept" else 1
        printed[malloc] = min(int(run_fresh_python(code, malloc, env={**env, **forced})) for _ in range(runs))
    return printed


@pytest.mark.skipif(hardware.detected().glibc_malloc != "on", reason="needs glibc's malloc")
def test_large_blocks_stay_mapped_from_training_step_to_step(run_fresh_python):
    """A training step frees and allocates blocks over the 32 MiB glibc maps at most (the tied embedding's float32
    gradients: 62.5 MiB at base); by default each is mapped afresh, its ~16,000 pages faulted in, every step."""
    code = """if True:
        import resource, sys, torch
        from zhen import hardware
        assert hardware.keep_freed_memory(large_blocks=True) == (sys.argv[1] == "kept")

        def step():
            blocks = [torch.empty(12_000_000).fill_(1.0) for _ in range(3)]  # 48 MB each

        for _ in range(3):  # glibc's heap settles over the first steps (a block mapped again in the second or third)
            step()
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(5):
            step()
        print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    """
    # kept_runs: a busy machine moves the heap's top more
    faults = printed_with_and_without_kept_memory(run_fresh_python, code, kept_runs=2)
    assert faults["kept"] < 1_000 and faults["default"] > 5 * 3 * 10_000, faults


@pytest.mark.skipif(hardware.detected().glibc_malloc != "on", reason="needs glibc's malloc")
def test_kept_freed_memory_stays_mapped_from_step_to_step(run_fresh_python):
    """In a fresh process glibc takes the values, and three blocks of 4–16 MB allocated and freed together step after
    step (logits, their log-softmax, ... of a batch that shrinks and grows) stay mapped: no page faults after the
    first steps, where glibc's own sliding thresholds map blocks afresh in three or four steps of twelve (4,000–12,000
    faults each). A step now and then still maps one block anew with the values (the heap's top moved under another
    thread's allocation), so the test counts the steps that fault, in both processes (zhen's: the fewer of two runs)."""
    code = """if True:
        import resource, sys, torch
        from zhen import hardware
        assert hardware.keep_freed_memory() == (sys.argv[1] == "kept")

        def step(i):
            size = (3_000_000, 2_000_000, 4_000_000, 1_000_000)[i % 4]
            blocks = [torch.empty(size).fill_(1.0) for _ in range(3)]

        for i in range(4):
            step(i)
        faults = [resource.getrusage(resource.RUSAGE_SELF).ru_minflt]
        for i in range(12):
            step(i)
            faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt)
        print(sum(after - before > 100 for before, after in zip(faults, faults[1:])))
    """
    # kept_runs: a busy machine moves the heap's top more
    faulting_steps = printed_with_and_without_kept_memory(run_fresh_python, code, kept_runs=2)
    assert faulting_steps["kept"] <= 1 < faulting_steps["default"], faulting_steps


@pytest.mark.skipif(
    platform.machine().lower() not in hardware.X86 or "fbgemm" not in torch.backends.quantized.supported_engines,
    reason="FBGEMM's and oneDNN's AVX2 kernels are x86's",
)
def test_int8_full_range_is_off_where_the_int8_kernels_add_pairs_of_products_in_int16(run_fresh_python):
    """Kernels without VNNI (here forced: FBGEMM's and oneDNN's AVX2 code, on any x86 CPU) overflow int16 sums of
    8-bit activations; the probe sees it and zhen keeps PyTorch's 7 bits there. Where the CPU has VNNI or AMX and
    nothing caps the kernels, it is on."""
    probe = "from zhen import hardware; print(hardware.detected().int8_full_range)"
    capped = {**os.environ, "FBGEMM_ENABLE_INSTRUCTIONS": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2"}
    capped.pop("ZHEN_HARDWARE", None)
    assert run_fresh_python(probe, env=capped).strip() == "off"
    vnni = any(getattr(torch.cpu, f"_is_{isa}_supported", lambda: False)() for isa in ("vnni", "amx_tile"))
    if vnni and "FBGEMM_ENABLE_INSTRUCTIONS" not in os.environ and "ONEDNN_MAX_CPU_ISA" not in os.environ:
        assert hardware.detected().int8_full_range == "on"


def test_mkl_multiplies_few_rows_only_on_intel_cpus(monkeypatch, fresh_detection):
    """MKL runs its own code on Intel's CPUs and code for older CPUs elsewhere (AMD's), where a oneDNN call beats its
    few-row products: detected from the CPU's vendor, where this PyTorch has MKL."""
    has_mkl = hardware.detected().mkl_packing == "on"
    for vendor, expected in (("GenuineIntel", "on" if has_mkl else "off"), ("AuthenticAMD", "off"), ("", "off")):
        hardware.detected.cache_clear()
        monkeypatch.setattr(hardware, "_cpu_vendor", lambda vendor=vendor: vendor)
        assert hardware.detected().mkl_few_rows == expected, vendor


def test_float32_training_multiplies_through_onednn_on_x86_cpus_other_than_intels(monkeypatch, fresh_detection):
    """MKL (PyTorch's matmul on x86) runs code for older CPUs on AMD's, where oneDNN's products of a training step's
    shapes are the faster: detected from the CPU's vendor and architecture, where this PyTorch has oneDNN; `"matmul"`
    wherever PyTorch has no oneDNN, even forced."""
    onednn = hardware.detected().onednn_packing == "on"
    cases = [("x86_64", "AuthenticAMD", "onednn" if onednn else "matmul"), ("x86_64", "GenuineIntel", "matmul"),
             ("aarch64", "", "matmul"), ("AMD64", "HygonGenuine", "onednn" if onednn else "matmul")]  # fmt: skip
    for machine, vendor, expected in cases:
        hardware.detected.cache_clear()
        monkeypatch.setattr(hardware, "_cpu_vendor", lambda vendor=vendor: vendor)
        monkeypatch.setattr(hardware.platform, "machine", lambda machine=machine: machine)
        assert hardware.detected().float32_training == expected, (machine, vendor)
    with hardware.forced(float32_training="onednn", onednn_packing="off") as machine:
        assert machine.float32_trainer() == "matmul"
    with pytest.raises(ValueError, match="float32_training='mkl' is invalid"):
        with hardware.forced(float32_training="mkl"):
            pass


@pytest.mark.parametrize("float32_training", ["matmul", "onednn"])
def test_zhen_env_says_how_float32_training_multiplies_and_attends(capsys, float32_training):
    from zhen.commands import env

    with hardware.forced(cpu_bf16="emulated", onednn_packing="on", float32_training=float32_training, cuda=False):
        env.main([])
    out = capsys.readouterr().out
    onednn = float32_training == "onednn"
    assert f"float32 training products by {'oneDNN' if onednn else 'matmul'}" in out
    assert ("linear layers' products by oneDNN" in out) == onednn
    attention = "two matmuls and a softmax" if onednn else "SDPA"
    assert f"trains in: float32 (no mixed precision), through packed batches (attention by {attention}" in out


def test_onednn_linear_is_linear():
    torch.manual_seed(0)
    x, weight, bias = torch.randn(70, 48), torch.randn(40, 48), torch.randn(40)
    torch.testing.assert_close(hardware.onednn_linear(x, weight, bias), torch.nn.functional.linear(x, weight, bias))
    torch.testing.assert_close(hardware.onednn_linear(x, weight.t().contiguous().t()), x @ weight.t())


@pytest.mark.parametrize("capability,floats", [("AVX512", 16), ("AVX2", 8), ("DEFAULT", 0), ("SVE256", 0)])
def test_short_rows_are_those_under_a_vector_register_of_pytorchs_softmax_kernel(monkeypatch, capability, floats):
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: capability)
    assert hardware.short_row_floats() == floats


@pytest.mark.skipif(platform.machine().lower() not in hardware.X86, reason="ATen's AVX2 kernels are x86's")
def test_the_short_row_length_follows_the_kernels_pytorch_dispatches_to(run_fresh_python):
    """Forced to ATen's AVX2 kernels (any x86 CPU runs them) rows under 8 floats are short; with its plain code, none
    are taken apart."""
    probe = "from zhen import hardware; print(hardware.SHORT_ROW_FLOATS)"
    for capability, expected in (("avx2", "8"), ("default", "0")):
        env = {**os.environ, "ATEN_CPU_CAPABILITY": capability}
        assert run_fresh_python(probe, env=env).strip() == expected, capability


@pytest.mark.parametrize("scripted", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_row_softmax_is_softmax_over_the_last_dimension_in_float32(scripted, dtype):
    """Rows shorter than `short_below` as the columns of the transposed scores where there are `least_scores` or more
    (each limit given here, so that every CPU takes both ways), else PyTorch's softmax over the last dimension: float32
    and contiguous either way, equal to the plain softmax to float32 rounding; compiled by TorchScript too, as the
    decoding programs compile it."""
    softmax = torch.jit.script(hardware.row_softmax) if scripted else hardware.row_softmax
    generator = torch.Generator().manual_seed(0)
    cases = [  # shape, short_below, least_scores, by columns
        ((64, 4, 1, 10), 16, 512, True),
        ((8, 4, 10, 10), 16, 512, True),  # training's groups: a query row per position
        ((4, 8, 1, 10), 16, 512, False),  # too few scores
        ((64, 4, 1, 10), 8, 512, False),  # rows as long as an AVX2 register
        ((64, 4, 1, 16), 16, 512, False),
        ((64, 4, 1, 10), 0, 512, False),
        ((2, 1, 3), 16, 1, True),
    ]
    for shape, short_below, least_scores, by_columns in cases:
        scores = torch.randn(shape, generator=generator).to(dtype)
        scores[0, ..., -1] = -torch.inf  # a masked position
        actual = softmax(scores, short_below, least_scores)
        if by_columns:
            columns = scores.reshape(-1, shape[-1]).t().contiguous()
            expected = columns.softmax(0, dtype=torch.float32).t().contiguous().view(shape)
        else:
            expected = scores.softmax(-1, dtype=torch.float32)
        assert actual.dtype == torch.float32 and actual.is_contiguous() and actual.shape == scores.shape
        assert torch.equal(actual, expected), (shape, short_below, least_scores)
        torch.testing.assert_close(actual, scores.float().softmax(-1), rtol=1e-6, atol=1e-7)
