# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""int8 inference for zhen models on the CPU.

`quantize_dynamic(model)` returns a copy whose `nn.Linear` layers (attention projections, feed-forward, LM head) keep
int8 weights with one scale per output row and quantize their inputs on the fly (PyTorch's dynamic quantization:
FBGEMM's int8 kernels, and oneDNN's for the LM head where the CPU has VNNI or AMX). Embeddings and norms stay float32.
Use it with `zhen.fast_generation.generate` or `model.generate`; `benchmarks/bleu_int8.py` measures what it costs in
BLEU on a trained checkpoint.
"""

import copy
import warnings

import torch
from torch import nn

from . import hardware


def quantize_dynamic(model: nn.Module, per_channel: bool = True) -> nn.Module:
    """An int8 copy of `model` for CPU inference (eval mode). The original model is left untouched. Where oneDNN
    multiplies int8 with VNNI or AMX instructions (`zhen.hardware`'s `onednn_int8`), the LM head's weight is packed
    for oneDNN, whose product at the vocabulary's width is the faster one there; the narrower products stay FBGEMM's
    (measured: README, Performance)."""
    return quantize_parts(copy.deepcopy(model).float().eval(), per_channel=per_channel)


def quantize_parts(model: nn.Module, parts: list[str] | None = None, per_channel: bool = True,
                   onednn_head: bool = True) -> nn.Module:  # fmt: skip
    """[`quantize_dynamic`] in place: the `nn.Linear` layers of `model`'s submodules named `parts` (all of them by
    default) replaced by dynamic int8 ones, the LM head packed for oneDNN where [`quantize_dynamic`] packs it
    (`onednn_head`); returns `model`."""
    from torch.ao.quantization import default_dynamic_qconfig, per_channel_dynamic_qconfig
    from torch.ao.quantization import quantize_dynamic as torch_quantize_dynamic

    qconfig = per_channel_dynamic_qconfig if per_channel else default_dynamic_qconfig
    spec = {nn.Linear: qconfig} if parts is None else dict.fromkeys(parts, qconfig)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.ao.quantization announces its move to torchao
        linears = {nn.Linear: torch.ao.nn.quantized.dynamic.Linear}  # within `parts`, nothing else
        quantized = torch_quantize_dynamic(model, spec, dtype=torch.qint8, mapping=linears, inplace=True)
    for module in quantized.modules():
        if isinstance(module, torch.ao.nn.quantized.dynamic.Linear):
            module.packed_for = torch.backends.quantized.engine
    head = quantized.get_output_embeddings() if hasattr(quantized, "get_output_embeddings") else None
    int8_head = isinstance(head, torch.ao.nn.quantized.dynamic.Linear)
    if onednn_head and int8_head and hardware.current().onednn_int8 == "on":
        pack_for(head, "onednn")
    return quantized


def pack_for(linear: nn.Module, engine: str) -> nn.Module:
    """Pack the int8 weight of a dynamic quantized `Linear` for `engine`'s kernels (`"onednn"`, `"fbgemm"`): the
    same int8 weight and scales, in the layout of the kernels that multiply by it; `linear.packed_for` names them
    (set on every product `quantize_dynamic` quantizes: decoding fuses ReLU into a product only where it knows
    the packing takes it; oneDNN's does not dependably, [`zhen.fast_generation.relu_fuses`])."""
    weight, bias = linear._weight_bias()
    previous = torch.backends.quantized.engine
    torch.backends.quantized.engine = engine  # what packing packs for
    try:
        linear.set_weight_bias(weight, bias)
    finally:
        torch.backends.quantized.engine = previous
    linear.packed_for = engine
    return linear


def is_quantized(model: nn.Module) -> bool:
    return any(type(m).__module__.startswith("torch.ao.nn.quantized") for m in model.modules())


__all__ = ["quantize_dynamic", "quantize_parts", "is_quantized", "pack_for"]
