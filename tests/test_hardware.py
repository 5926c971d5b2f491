"""`zhen.hardware`: one place decides every hardware-dependent branch, and each can be forced on any machine."""

import pytest
import torch

from zhen import hardware


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
    monkeypatch.setenv("ZHEN_HARDWARE", "cpu_bf16=emulated, mkl_packing=off,onednn_packing=off,cuda=false")
    machine = hardware.current()
    assert (machine.cpu_bf16, machine.mkl_packing, machine.onednn_packing, machine.cuda) == ("emulated", "off", "off",
                                                                                            False)  # fmt: skip
    monkeypatch.setenv("ZHEN_HARDWARE", "cpu_bf16=fast")
    with pytest.raises(ValueError, match=r"ZHEN_HARDWARE: cpu_bf16='fast' is invalid"):
        hardware.current()
    monkeypatch.setenv("ZHEN_HARDWARE", "gpu=yes")
    with pytest.raises(ValueError, match="unknown hardware field 'gpu'"):
        hardware.current()


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

    with hardware.forced(cpu_bf16="native", cuda=False):
        env.main([])
    out = capsys.readouterr().out
    assert "CPU bf16 native" in out and "trains in: bf16" in out and "bf16 copies of the decoder weights" in out
    assert "through packed batches and the fused loss" in out
    assert f"decode {hardware.decoding_streams('cpu')} batch(es) at once" in out
    assert "torch 2." in out and "transformers 5." in out
    with hardware.forced(cpu_bf16="emulated", onednn_packing="on", cuda=False):
        env.main([])
    assert "float32 weights packed for oneDNN" in capsys.readouterr().out
    with hardware.forced(cpu_bf16="emulated", onednn_packing="off", mkl_packing="on", cuda=False):
        env.main([])
    assert "float32 weights packed for MKL" in capsys.readouterr().out
    with hardware.forced(cpu_bf16="emulated", mkl_packing="off", onednn_packing="off", cuda=False):
        env.main([])
    out = capsys.readouterr().out
    assert "trains in: no" in out and "the float32 weights as they are" in out
    with hardware.forced(cuda=True, cuda_bf16=True):
        env.main([])
    out = capsys.readouterr().out
    assert "on the GPU bf16 copies of the decoder weights, each decoder step replayed as a CUDA graph" in out
    assert "through the plain model" in out


@pytest.mark.parametrize("bf16_seconds,native", [(0.25, "native"), (0.9, "emulated"), (4.0, "emulated")])
def test_bf16_is_measured_where_pytorch_reports_no_cpu_flags(monkeypatch, bf16_seconds, native):
    """On an ARM CPU (no AVX512-BF16/AMX flags to read) whether bf16 is native is measured: a bf16 product at least
    1.5x faster than float32's counts as native."""
    monkeypatch.setattr(hardware.platform, "machine", lambda: "aarch64")
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: False, raising=False)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: False, raising=False)
    monkeypatch.setattr(hardware, "gemm_seconds", lambda dtype: bf16_seconds if dtype == torch.bfloat16 else 1.0)
    hardware.detected.cache_clear()
    try:
        assert hardware.detected().cpu_bf16 == native
    finally:
        hardware.detected.cache_clear()


def test_bf16_measurement_times_products_in_each_dtype():
    assert 0 < hardware.gemm_seconds(torch.bfloat16, repeats=1) < 10
    assert isinstance(hardware.bf16_measured_faster(), bool)
