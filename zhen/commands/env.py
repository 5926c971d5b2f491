# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""`zhen-env`: what zhen found on this machine (CPU bf16, MKL, GPU) and what it does there, with the versions of the
libraries it runs on; paste it into a bug report.

Example:

```bash
zhen-env
ZHEN_HARDWARE=cpu_bf16=emulated zhen-env     # what zhen does on a CPU without bf16 instructions
```
"""

import os
import platform
from importlib.metadata import version

import torch

from .. import hardware
from ..draft_decoding import MAX_DRAFTED_SENTENCES
from ..screened_argmax import screen_pays
from ._cli import command, make_parser


PACKAGES = ("zhen-transformer", "torch", "transformers", "tokenizers", "accelerate", "datasets", "sacrebleu")


@command("zhen-env")
def main(argv: list[str] | None = None) -> None:
    make_parser("zhen-env", __doc__.split("\n\n")[0]).parse_args(argv)
    print(report())
    print(f"Python {platform.python_version()} on {platform.platform()}")
    print(", ".join(f"{name} {_version(name)}" for name in PACKAGES))


def _version(package: str) -> str:
    try:
        return version(package)
    except Exception:
        return "not installed"


PRECISIONS = {"bf16": "bf16", "fp16": "fp16", "no": "float32 (no mixed precision)"}


def _packed_training(machine: hardware.Hardware, precision: str) -> str:
    kernel = hardware.training_attention_kernel("cpu", precision)
    attention = "two matmuls and a softmax" if kernel == "matmul" else "SDPA"
    onednn = precision == "no" and machine.float32_trainer() == "onednn"
    linears = ", linear layers' products by oneDNN" if onednn else ""
    return f"packed batches (attention by {attention} per group of sentences{linears}) and the fused loss"


def report() -> str:
    """What zhen found on this machine and what it does there, in words (what `zhen-env` prints)."""
    machine, cpu = hardware.current(), hardware.cpu_name()
    on_cpu = not machine.cuda
    float32_packed = machine.cpu_bf16 != "native" and machine.float32_packer() is not None
    screened = float32_packed and screen_pays(machine)
    screened_bf16 = not float32_packed and machine.int8_outruns_bf16() and screen_pays(machine)
    precision = hardware.training_precision("auto", on_cpu)
    lines = [
        f"CPU: {cpu} ({os.cpu_count()} logical cores, PyTorch uses {torch.get_num_threads()} threads)",
        f"Found: {machine.describe()}" + (" (forced by ZHEN_HARDWARE)" if hardware.environment_overrides() else ""),
        f"zhen-train --mixed-precision auto trains in: {PRECISIONS[precision]}, through "
        + (_packed_training(machine, precision) if hardware.packing_pays("cpu" if on_cpu else "cuda") else
           "the plain model (on a GPU it launches fewer kernels than the packed path)"),
        "zhen.translate and the pipeline decode with: "
        + (f"bf16 copies of the decoder weights{' packed for oneDNN' * machine.packs_bf16()}"
           if machine.cpu_bf16 == "native" else
           "float32 weights packed for oneDNN" if machine.float32_packer() == "onednn" else
           "float32 weights packed for MKL" if machine.float32_packer() == "mkl" else "the float32 weights as they are")
        + " on the CPU, the decoder's layers as one program, compiled by TorchScript once a model has decoded for a"
        " second (zhen.layer_steps)"
        + (", greedy search's next token screened by an int8 product (zhen.screened_argmax)" if screened else
           ", greedy search's next token screened by an int8 product where the LM head has 8M weights or more"
           " (transformer-base's 32k x 512; zhen.screened_argmax)" if screened_bf16 else "")
        + _drafted_searches(machine, float32_packed)
        + ("; a model with bf16 weights through a float32 copy (zhen.fast_generation.decoding_model)"
           if machine.cpu_bf16 == "emulated" else "")
        + (f"; on the GPU {'bf16 copies of the decoder weights' if machine.cuda_bf16 else 'the model weights'}, "
           "each decoder step replayed as a CUDA graph" if machine.cuda else ""),
        f"zhen.translate and the pipeline decode {hardware.decoding_streams('cpu')} batch(es) at once on the CPU"
        " (decoding streams)",
        "int8 (--int8, zhen.quantization) multiplies with "
        + ("FBGEMM's int8 kernels, batches of many rows (the LM head's from 16) with oneDNN's in AMX tiles"
           if machine.onednn_int8 == "on" and machine.amx_int8 == "on" else
           "FBGEMM's int8 kernels, the LM head's of 24 rows or more with oneDNN's" if machine.onednn_int8 == "on" else
           "FBGEMM's int8 kernels" if machine.fbgemm == "on" else "PyTorch's default int8 kernels")
        + (", activations quantized to 8 bits (the kernels sum them exactly)" if machine.int8_full_range == "on" else
           ", activations quantized to 8 bits by 7-bit weights, the LM head's to 7 bits by 8-bit weights (the kernels "
           "add pairs of products in int16)"),
    ]  # fmt: skip
    return "\n".join(lines)


def _drafted_searches(machine: hardware.Hardware, float32_packed: bool) -> str:
    """`report`'s words for the searches `zhen.draft_decoding` drafts by default in this machine's CPU session."""
    if machine.fbgemm != "on" or not (float32_packed or machine.cpu_bf16 == "native"):
        return ""
    beams = " and one text's beam search" if float32_packed else ""
    return (
        f", greedy search of 1 to {MAX_DRAFTED_SENTENCES} texts{beams} on a large decoder drafted by an int8 copy"
        " (zhen.draft_decoding)"
    )


if __name__ == "__main__":
    main()
