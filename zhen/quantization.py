# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""int8 inference for zhen models on the CPU.

`quantize_dynamic(model)` returns a copy whose `nn.Linear` layers (attention projections, feed-forward, LM head) keep
int8 weights with one scale per output row and quantize their inputs on the fly (PyTorch's dynamic quantization;
FBGEMM/oneDNN int8 kernels with AVX512-VNNI or AMX where the CPU has them). Embeddings and norms stay float32.
Use it with `zhen.fast_generation.generate` or `model.generate`; `benchmarks/bleu_int8.py` measures what it costs in
BLEU on a trained checkpoint.
"""

import copy
import warnings

import torch
from torch import nn


def quantize_dynamic(model: nn.Module, per_channel: bool = True) -> nn.Module:
    """An int8 copy of `model` for CPU inference (eval mode). The original model is left untouched."""
    from torch.ao.quantization import default_dynamic_qconfig, per_channel_dynamic_qconfig
    from torch.ao.quantization import quantize_dynamic as torch_quantize_dynamic

    model = copy.deepcopy(model).float().eval()
    qconfig = per_channel_dynamic_qconfig if per_channel else default_dynamic_qconfig
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.ao.quantization announces its move to torchao
        return torch_quantize_dynamic(model, {nn.Linear: qconfig}, dtype=torch.qint8)


def is_quantized(model: nn.Module) -> bool:
    return any(type(m).__module__.startswith("torch.ao.nn.quantized") for m in model.modules())


__all__ = ["quantize_dynamic", "is_quantized"]
