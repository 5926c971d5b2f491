# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""The modules a decoding session (`zhen.fast_generation.FastDecoder`) swaps into a model for its time: the same
products, by copies of the weights in the layout this machine multiplies fastest (`zhen.hardware`), and nothing that
does nothing.

- [`PackedLinear`]: a float32 weight packed once for oneDNN's or MKL's GEMM; [`ScreenedHead`] adds greedy search's
  argmax screened by an int8 product (`zhen.screened_argmax`).
- [`Bf16Linear`], [`Bf16ReluMLP`]: bf16 copies (packed for oneDNN on a CPU), ReLU fused into the first product of a
  feed-forward; [`ScreenedBf16Head`] screens greedy search's argmax where int8 products outrun bf16 ones.
- [`Int8Linear`], [`Int8ReluMLP`]: a dynamically quantized linear's own packed weight called directly, ReLU fused.
- [`INERT`]: every eval-mode dropout.
"""

import sys

import torch
from torch import nn

from . import hardware, layer_steps
from .hardware import autocast_dtype
from .hardware import current as current_hardware
from .screened_argmax import ScreenedArgmax


def is_relu_mlp(module: nn.Module) -> bool:
    # By name: a checkpoint loaded as Hub custom code has its own copy of the `ZhenMLP` class.
    return type(module).__name__ == "ZhenMLP" and isinstance(module.activation_fn, nn.ReLU)


class Inert(nn.Identity):
    """What every eval-mode dropout is in a session: one module shared by every model's sessions, whose mode
    `train()` leaves alone (the dropout it stands for takes the mode as the session closes)."""

    def __init__(self):
        super().__init__()
        self.training = False

    def train(self, mode: bool = True) -> "Inert":
        return self


INERT = Inert()


class PackedLinear(nn.Module):
    """A float32 `nn.Linear` for decoding, multiplying by its weight packed once into the GEMM layout of oneDNN or MKL,
    whichever is faster here (`zhen.hardware`: `float32_packer`): decoding multiplies a few rows by the same weights
    step after step, and plain `sgemm` repacks the weight on every call. Float32 products either way. Other dtypes and
    autocast go to `linear` unchanged, as do products oneDNN's call costs more than it saves
    (`zhen.layer_steps.few_rows`)."""

    def __init__(self, linear: nn.Linear):
        super().__init__()
        self.linear = linear
        weight, packer = linear.weight.detach(), current_hardware().float32_packer()
        packer = packer if weight.dtype == torch.float32 and weight.device.type == "cpu" else None
        self.onednn = self.mkl = None
        self.few_rows = 0  # products of up to these rows by the weight as it is (MKL), where oneDNN packs
        if packer == "onednn":
            self.onednn = torch.ops.mkldnn._reorder_linear_weight(weight, None)
            self.few_rows = layer_steps.few_rows(weight, bf16=False)
        elif packer == "mkl":
            self.mkl = torch.ops.mkl._mkl_reorder_linear_weight(weight, hardware.MKL_PACKED_ROWS)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weight = self.linear.weight
        rows = x.numel() // weight.shape[1]
        if (
            x.dtype != torch.float32
            or weight.dtype != torch.float32
            or x.device.type != "cpu"
            or torch.is_autocast_enabled("cpu")
            or torch.is_grad_enabled()  # a training step's (another thread's): the weight's own product, its gradient
        ):
            return self.linear(x)
        if self.onednn is not None and rows > self.few_rows:  # as `OnednnProduct`
            return torch.ops.mkldnn._linear_pointwise(x, self.onednn, self.linear.bias, "none", [], "")
        if self.mkl is not None:
            return torch.ops.mkl._mkl_linear(x, self.mkl, weight, self.linear.bias, rows)
        return self.linear(x)


class ScreensArgmax:
    """Greedy search's next tokens of an LM head's session copy, found by screening the vocabulary with an int8
    product ([`zhen.screened_argmax.ScreenedArgmax`], `self.screen`): the float32 logits' argmax."""

    screen: ScreenedArgmax

    def next_tokens(self, hidden_states: torch.Tensor, banned: int | None = None) -> torch.LongTensor | None:
        """The argmax of each row's logits, never `banned`; None where the screen leaves too many candidates."""
        if (
            hidden_states.dtype != torch.float32
            or hidden_states.device.type != "cpu"
            or torch.is_autocast_enabled("cpu")
        ):
            return None
        return self.screen(hidden_states, banned)


class ScreenedHead(ScreensArgmax, PackedLinear):
    """The LM head of a float32 session: [`PackedLinear`]'s logits, and greedy search's next tokens screened
    ([`ScreensArgmax`])."""

    def __init__(self, linear: nn.Linear):
        super().__init__(linear)
        self.screen = ScreenedArgmax(linear)


class Int8Linear(nn.Module):
    """A dynamically quantized int8 `Linear` (`zhen.quantization`) for decoding: the same int8 product of the same
    packed weights, without the module's no-op cast of its float32 output to float32. The inputs of
    `many_rows_numel` entries or more of a [`zhen.quantization.RowDispatchedLinear`] are multiplied by its oneDNN
    packing (`many_rows`), as it multiplies them."""

    def __init__(self, linear: nn.Module):
        super().__init__()
        self.linear = linear
        self.packed = linear._packed_params._packed_params
        own_rule = linear.version is not None and linear.version >= 4  # PyTorch's own module's: 7 bits from version 4
        self.reduce_range = getattr(linear, "reduce_range", own_rule)
        self.many_rows_numel = getattr(linear, "many_rows_numel", sys.maxsize)
        wide = self.many_rows_numel != sys.maxsize
        self.onednn_rows = self.many_rows_numel // linear.in_features if wide else sys.maxsize
        self.many_rows = None  # oneDNN's packing, made at first need ([`onednn_packing`])

    def onednn_packing(self):
        """The weight's oneDNN packing, for inputs of `many_rows_numel` entries or more (made once, by the module)."""
        if self.many_rows is None:
            self.many_rows = self.linear.many_rows_packing()
        return self.many_rows

    def made_from(self, linear: nn.Module) -> bool:
        """Whether this replaces `linear` as it is now (not packed again since)."""
        return (
            self.linear is linear
            and self.packed is linear._packed_params._packed_params
            and self.many_rows_numel == getattr(linear, "many_rows_numel", sys.maxsize)
        )

    @staticmethod
    def replaces(module: nn.Module) -> bool:
        """Whether `module` is a float32-input int8 dynamic `Linear` this class computes exactly."""
        return isinstance(module, torch.ao.nn.quantized.dynamic.Linear) and module._packed_params.dtype == torch.qint8

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dtype != torch.float32:
            return self.linear(x)
        packed = self.onednn_packing() if x.numel() >= self.many_rows_numel else self.packed
        return hardware.packed_product(torch.ops.quantized.linear_dynamic, x, packed, self.reduce_range)

    def relu(self, x: torch.Tensor) -> torch.Tensor:
        """`relu(self(x))` of a float32 `x`, ReLU fused into the product where its packing takes it ([`relu_fuses`])."""
        if x.numel() >= self.many_rows_numel:
            return hardware.packed_product(torch.ops.quantized.linear_dynamic, x, self.onednn_packing(),
                                           self.reduce_range).relu_()  # fmt: skip
        return hardware.packed_product(torch.ops.quantized.linear_relu_dynamic, x, self.packed, self.reduce_range)


class Int8ReluMLP(nn.Module):
    """A ReLU `ZhenMLP` of an int8 model (eval mode) in a decoding session: ReLU fused into `fc1`'s int8 product
    (the same numbers as the product, then ReLU), then `fc2`: one pass over the widest activation fewer."""

    def __init__(self, mlp: nn.Module):
        super().__init__()
        self.mlp = mlp
        self.fc1, self.fc2 = Int8Linear(mlp.fc1), Int8Linear(mlp.fc2)
        self.onednn_rows = min(self.fc1.onednn_rows, self.fc2.onednn_rows)

    def made_from(self, mlp: nn.Module) -> bool:
        """Whether this replaces `mlp` as it is now (the same products, packed as they were)."""
        return self.mlp is mlp and self.fc1.made_from(mlp.fc1) and self.fc2.made_from(mlp.fc2)

    @staticmethod
    def replaces(module: nn.Module) -> bool:
        """Whether `module` is an eval-mode ReLU MLP whose two products this class computes exactly: `fc1`'s packing
        must take the ReLU fused ([`relu_fuses`])."""
        return (
            is_relu_mlp(module)
            and not module.training
            and Int8Linear.replaces(module.fc1)
            and Int8Linear.replaces(module.fc2)
            and relu_fuses(module.fc1)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dtype != torch.float32:
            return self.mlp(x)
        return self.fc2(self.fc1.relu(x))


def lean_int8_class(module: nn.Module) -> type | None:
    """[`Int8ReluMLP`] or [`Int8Linear`], whichever replaces `module` in a session; None for neither."""
    if type(module).__name__ not in ("Linear", "DynamicInt8Linear", "RowDispatchedLinear", "ZhenMLP"):  # a string test
        return None
    return Int8ReluMLP if Int8ReluMLP.replaces(module) else Int8Linear if Int8Linear.replaces(module) else None


def relu_fuses(linear: nn.Module) -> bool:
    """Whether ReLU may be fused into this int8 `Linear`'s product (`quantized::linear_relu_dynamic`): where
    `zhen.quantization` packed its weight for FBGEMM (`packed_for`). PyTorch 2.13's oneDNN product keeps one kernel
    for the first input shape it meets, with or without the ReLU of that first call, and reuses it for later calls of
    that shape either way; for a packing not known, ReLU stays apart."""
    return getattr(linear, "packed_for", None) in ("fbgemm", "x86")


class Bf16Linear(nn.Module):
    """A float32 `nn.Linear` for decoding on a CPU with native bf16: it multiplies by a bfloat16 copy of its weight
    (made once per session) and returns float32, so that norms, attention and the cache stay float32. Where oneDNN can
    (`zhen.hardware`: `Hardware.packs_bf16`), the copy is packed once into oneDNN's GEMM layout: the same products,
    without the reordering of the weight that each plain bf16 product of a few rows repeats. A product of up to
    `few_rows` rows multiplies by the float32 weight as it is instead: faster there than a bf16 call (on a CPU, where
    the session finds the model's decoder small enough, `FastDecoder.multiply_few_rows_in_float32`, and MKL fast:
    `zhen.layer_steps.few_rows`)."""

    def __init__(self, linear: nn.Linear):
        super().__init__()
        self.linear = linear
        weight = linear.weight.detach().to(torch.bfloat16)
        self.bias = None if linear.bias is None else linear.bias.detach().to(torch.bfloat16)
        self.packed = weight.device.type == "cpu" and current_hardware().packs_bf16()
        self.weight = torch.ops.mkldnn._reorder_linear_weight(weight, None) if self.packed else weight
        self.cpu_elements = weight.numel() if weight.device.type == "cpu" else 0  # read at every session's opening
        self.multiply_few_rows_in_float32(True)

    def multiply_few_rows_in_float32(self, allowed: bool):
        """Whether products of few rows (`few_rows`, on a CPU) multiply by the float32 weight as it is."""
        few_rows = layer_steps.few_rows_of(self.cpu_elements, bf16=True) if allowed and self.cpu_elements else 0
        if few_rows != getattr(self, "few_rows", None):  # a kept copy mostly has it already: `Module.__setattr__` costs
            self.few_rows = few_rows

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if torch.is_grad_enabled():  # a training step's (another thread's): the weight's own product, its gradient
            return self.linear(x)
        autocast = autocast_dtype(x.device)
        if autocast is None:
            if self.in_float32(x):
                return self.linear(x)
            return self.bf16(x.to(torch.bfloat16)).to(x.dtype)
        if autocast == torch.bfloat16:  # what autocast's own bf16 product gives, without casting the weight again
            return self.bf16(x.to(torch.bfloat16))
        return self.linear(x)

    def in_float32(self, x: torch.Tensor) -> bool:
        """Whether `x` has few enough rows to be multiplied by the float32 weight as it is."""
        return x.dtype == torch.float32 and x.numel() <= self.few_rows * x.shape[-1]

    def bf16(self, x16: torch.Tensor, relu: bool = False) -> torch.Tensor:
        """The product of a bf16 input, in bf16; with `relu`, ReLU fused into it."""
        if self.packed:
            return torch.ops.mkldnn._linear_pointwise(x16, self.weight, self.bias, "relu" if relu else "none", [], "")
        y = nn.functional.linear(x16, self.weight, self.bias)
        return y.relu_() if relu else y


class ScreenedBf16Head(ScreensArgmax, Bf16Linear):
    """The LM head of a bf16 session on a CPU whose int8 products outrun its bf16 ones (`zhen.hardware`'s
    `int8_outruns_bf16`): [`Bf16Linear`]'s logits (beam search), and greedy search's next tokens screened
    ([`ScreensArgmax`]): the argmax of the float32 logits rather than of their bf16 rounding."""

    def __init__(self, linear: nn.Linear):
        super().__init__(linear)
        self.screen = ScreenedArgmax(linear)


class Bf16ReluMLP(nn.Module):
    """A ReLU `ZhenMLP` in a bf16 session: `fc1` with ReLU fused into its product hands its bf16 output straight to
    `fc2`. The same numbers as `Bf16Linear(fc1)`, ReLU and `Bf16Linear(fc2)` (ReLU commutes with rounding to bf16),
    without two conversions and a float32 pass over the widest activation of the step."""

    def __init__(self, mlp: nn.Module):
        super().__init__()
        self.fc1, self.fc2 = Bf16Linear(mlp.fc1), Bf16Linear(mlp.fc2)
        self.__dict__["mlp"] = mlp  # not a submodule: its weights are `fc1.linear`'s and `fc2.linear`'s

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if torch.is_grad_enabled():  # a training step's (another thread's): the MLP's own forward, its gradients
            return self.mlp(x)
        autocast = autocast_dtype(x.device)
        if autocast not in (None, torch.bfloat16) or (autocast is None and self.fc1.in_float32(x)):
            return self.fc2(self.fc1(x).relu())
        y = self.fc2.bf16(self.fc1.bf16(x.to(torch.bfloat16), relu=True))
        return y if autocast else y.to(x.dtype)  # under bf16 autocast, bf16 as autocast's products give


__all__ = [
    "Bf16Linear",
    "Bf16ReluMLP",
    "INERT",
    "Int8Linear",
    "Int8ReluMLP",
    "PackedLinear",
    "ScreenedBf16Head",
    "ScreenedHead",
    "ScreensArgmax",
    "relu_fuses",
]
