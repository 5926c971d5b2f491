# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""int8 inference for zhen models on the CPU.

`quantize_dynamic(model)` returns a copy whose `nn.Linear` layers (attention projections, feed-forward, LM head) keep
int8 weights with one scale per output row and quantize their inputs on the fly (PyTorch's dynamic quantization:
FBGEMM's int8 kernels; oneDNN's for the LM head where the CPU has VNNI or AMX, and on AMX for the batches of many rows
that [`RowDispatchedLinear`] sends there). Activations take all 256 levels where those kernels sum them exactly
([`DynamicInt8Linear`]); elsewhere (kernels without VNNI add pairs of products in int16) the layers' weights take 7
bits so that their activations keep 8, and the LM head keeps 8-bit weights and 7-bit activations, which rank its logits
closer to float32's. Embeddings and norms stay float32.
Use it with `zhen.fast_generation.generate` or `model.generate`; `benchmarks/bleu_int8.py` measures what it costs in
BLEU on a trained checkpoint.
"""

import contextlib
import copy
import sys
import threading
import warnings

import torch
from torch import nn

from . import hardware


# From this many rows oneDNN's int8 product in AMX tiles beats FBGEMM's, for weights of at least WIDE_WEIGHT entries
# (benchmarks/results/2026-11-30-intel-amx-l.md).
MANY_ROWS = 128
WIDE_WEIGHT = 1 << 18
HEAD_MANY_ROWS = 16  # the LM head's: the vocabulary's width makes oneDNN's the faster product from fewer rows
# The LM head's with VNNI and no AMX, where FBGEMM's product of fewer rows is the faster one, up to twice as fast at one
# to eight rows (benchmarks/results/2026-11-30-zen4-q.md).
HEAD_MANY_ROWS_VNNI = 24
_PACKING = threading.Lock()  # [`packing_for_engine`]
# Kernels without VNNI add pairs of uint8 x int8 products in int16: 8-bit activations (up to 255) by weights of at most
# this magnitude cannot overflow it (2 x 255 x 63 < 2^15)
NARROW_WEIGHT_LEVELS = 63


class DynamicInt8Linear(torch.ao.nn.quantized.dynamic.Linear):
    """PyTorch's dynamic int8 `Linear` with activations quantized to all 256 levels wherever the CPU's int8 products
    sum them exactly: with any weight where the kernels have VNNI or AMX (`zhen.hardware`'s `int8_full_range`), and
    everywhere with a weight of 7 bits (at most `NARROW_WEIGHT_LEVELS`, which [`quantize_parts`] gives the layers of
    a model quantized on a CPU without them); else PyTorch's 7 bits (`reduce_range`, what kernels adding products in
    int16 need), twice the rounding error. Decided when the weight is set, by the machine it is set on."""

    def __init__(self, in_features: int, out_features: int, bias_: bool = True, dtype: torch.dtype = torch.qint8):
        # PyTorch's module packs a placeholder weight of the full size, which `from_float` or `set_weight_bias`
        # replaces at once: packed at 1 x 1 instead, a model's weights are packed once each, not twice.
        super().__init__(1, 1, bias_, dtype)
        self.in_features, self.out_features = in_features, out_features
        self.weight_bits, self.reduce_range = 8, True  # until the weight is set

    def set_weight_bias(self, weight: torch.Tensor, bias: torch.Tensor | None) -> None:
        super().set_weight_bias(weight, bias)
        self.fit_activations_to(weight)

    def _load_from_state_dict(self, *args, **kwargs):
        super()._load_from_state_dict(*args, **kwargs)
        self.fit_activations_to(self.weight())

    def fit_activations_to(self, weight: torch.Tensor):
        """8-bit activations where the kernels sum their products by `weight` exactly, else 7-bit ones."""
        narrow = weight.dtype == torch.qint8 and int(weight.int_repr().short().abs().max()) <= NARROW_WEIGHT_LEVELS
        self.weight_bits = 7 if narrow else 8
        self.reduce_range = not narrow and hardware.current().int8_full_range != "on"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        product = hardware.packed_product(torch.ops.quantized.linear_dynamic, x, self.packing_for(x), self.reduce_range)
        return product.to(x.dtype)

    def packing_for(self, x: torch.Tensor):
        """The packed weight that multiplies `x`."""
        return self._packed_params._packed_params

    def extra_repr(self) -> str:
        bits = f"activation_bits={7 if self.reduce_range else 8}, weight_bits={self.weight_bits}"
        return f"{super().extra_repr()}, {bits}"


class RowDispatchedLinear(DynamicInt8Linear):
    """A dynamic int8 `Linear` that multiplies batches of at least `MANY_ROWS` rows by a second packing of its int8
    weight, oneDNN's (AMX tiles), and fewer rows by its own, FBGEMM's, which is faster there. Both hold the same int8
    weight and scales and quantize the input alike: the two products agree to float32 rounding. Weights of fewer than
    `WIDE_WEIGHT` entries keep FBGEMM's product at every batch size. [`quantize_dynamic`] makes these where
    `zhen.hardware`'s `amx_int8` is on; oneDNN's packing is made at its first use, and again after a copy."""

    def __init__(self, in_features: int, out_features: int, bias_: bool = True, dtype: torch.dtype = torch.qint8):
        super().__init__(in_features, out_features, bias_, dtype)
        wide = self.in_features * self.out_features >= WIDE_WEIGHT
        self.many_rows_numel = MANY_ROWS * self.in_features if wide else sys.maxsize  # inputs this large go to oneDNN
        self._many_rows_packing = None

    def many_rows_packing(self):
        """The weight packed for oneDNN (made once, also where the streams of a session reach it at once; a copy of
        this module, or one loaded, makes it again)."""
        if self._many_rows_packing is None:
            with packing_for_engine("onednn"):
                if self._many_rows_packing is None:
                    self._many_rows_packing = torch.ops.quantized.linear_prepack(*self._weight_bias())
        return self._many_rows_packing

    def packing_for(self, x: torch.Tensor):
        """The packed weight that multiplies `x`: oneDNN's for many rows, else this module's own."""
        if x.numel() >= self.many_rows_numel:
            return self.many_rows_packing()
        return self._packed_params._packed_params

    def set_weight_bias(self, weight: torch.Tensor, bias: torch.Tensor | None) -> None:
        super().set_weight_bias(weight, bias)
        self._many_rows_packing = None

    def _load_from_state_dict(self, *args, **kwargs):
        super()._load_from_state_dict(*args, **kwargs)
        self._many_rows_packing = None

    def __getstate__(self):
        return {**super().__getstate__(), "_many_rows_packing": None}  # packed for the engine a copy is made under

    def _get_name(self):
        return "RowDispatchedQuantizedLinear"


def quantize_dynamic(model: nn.Module, per_channel: bool = True) -> nn.Module:
    """An int8 copy of `model` for CPU inference (eval mode). The original model is left untouched. Where oneDNN
    multiplies int8 with VNNI or AMX instructions (`zhen.hardware`'s `onednn_int8`), the LM head multiplies batches of
    many rows by a oneDNN packing of its weight, whose product at the vocabulary's width is the faster one there, and
    fewer rows (a text's beams, a batch's last rows) by FBGEMM's ([`RowDispatchedLinear`]): from `HEAD_MANY_ROWS_VNNI`
    rows, or with AMX (`amx_int8`) from `HEAD_MANY_ROWS`. The narrower products stay FBGEMM's, except on AMX, where
    every product sends its batches of many rows to oneDNN (measured: README, Performance)."""
    return quantize_parts(copy.deepcopy(model).float().eval(), per_channel=per_channel)


def quantize_parts(model: nn.Module, parts: list[str] | None = None, per_channel: bool = True,
                   onednn_head: bool = True, onednn_batches: bool = True,
                   few_rows: bool = False) -> nn.Module:  # fmt: skip
    """[`quantize_dynamic`] in place: the `nn.Linear` layers of `model`'s submodules named `parts` (all of them by
    default) replaced by dynamic int8 ones, the LM head given oneDNN's packing for many rows where
    [`quantize_dynamic`] gives it one (`onednn_head`), batches of many rows sent to oneDNN where it sends them
    (`onednn_batches`: a model that only ever multiplies few rows, as a draft, leaves it off); returns `model`.
    Without VNNI the layers' weights take 7 bits so that their activations keep 8; not with `few_rows` (a draft's
    steps of one text: a row's activations there have nearly a scale of their own, and 8-bit weights kept more of
    the draft's tokens, README)."""
    from torch.ao.quantization import default_dynamic_qconfig, per_channel_dynamic_qconfig
    from torch.ao.quantization import quantize_dynamic as torch_quantize_dynamic

    qconfig = per_channel_dynamic_qconfig if per_channel else default_dynamic_qconfig
    wide = few_rows or hardware.current().int8_full_range == "on"
    layers = qconfig if wide else narrow_weights(qconfig, per_channel)
    spec = {nn.Linear: layers} if parts is None else dict.fromkeys(parts, layers)
    head_name = output_embeddings_name(model)
    if head_name is not None and (parts is None or head_name in parts):
        spec[head_name] = qconfig  # 8-bit weights rank the logits closer to float32's than 8-bit activations (README)
    amx = onednn_batches and hardware.current().amx_int8 == "on"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.ao.quantization announces its move to torchao
        linears = {nn.Linear: RowDispatchedLinear if amx else DynamicInt8Linear}  # nothing else
        quantized = torch_quantize_dynamic(model, spec, dtype=torch.qint8, mapping=linears, inplace=True)
    for module in quantized.modules():
        if isinstance(module, torch.ao.nn.quantized.dynamic.Linear):
            module.packed_for = torch.backends.quantized.engine
    head = quantized.get_output_embeddings() if hasattr(quantized, "get_output_embeddings") else None
    int8_head = isinstance(head, torch.ao.nn.quantized.dynamic.Linear)
    if onednn_head and int8_head and hardware.current().onednn_int8 == "on":
        if not isinstance(head, RowDispatchedLinear):
            head = row_dispatched(head)
            quantized.set_output_embeddings(head)
        amx_head = hardware.current().amx_int8 == "on"
        head.many_rows_numel = (HEAD_MANY_ROWS if amx_head else HEAD_MANY_ROWS_VNNI) * head.in_features
    return quantized


def narrow_weights(qconfig, per_channel: bool):
    """`qconfig` with its weights quantized to `NARROW_WEIGHT_LEVELS` levels either side of zero (7 bits)."""
    from torch.ao.quantization import MinMaxObserver, PerChannelMinMaxObserver, QConfig

    observer = PerChannelMinMaxObserver if per_channel else MinMaxObserver
    qscheme = torch.per_channel_symmetric if per_channel else torch.per_tensor_symmetric
    weight = observer.with_args(dtype=torch.qint8, qscheme=qscheme, quant_min=-NARROW_WEIGHT_LEVELS,
                                quant_max=NARROW_WEIGHT_LEVELS)  # fmt: skip
    return QConfig(activation=qconfig.activation, weight=weight)


def output_embeddings_name(model: nn.Module) -> str | None:
    """The name of `model`'s LM head among its modules, if it has one."""
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    return next((name for name, module in model.named_modules() if module is head), None) if head is not None else None


def row_dispatched(linear: DynamicInt8Linear) -> RowDispatchedLinear:
    """A [`RowDispatchedLinear`] of the same int8 weight, scales and bias as `linear`: its very packing (unpacking and
    packing the LM head's again would cost more than quantizing it)."""
    dispatched = RowDispatchedLinear(linear.in_features, linear.out_features)
    dispatched._packed_params = linear._packed_params
    dispatched.reduce_range, dispatched.packed_for = linear.reduce_range, linear.packed_for
    dispatched.weight_bits = linear.weight_bits
    return dispatched


def pack_for(linear: nn.Module, engine: str) -> nn.Module:
    """Pack the int8 weight of a dynamic quantized `Linear` for `engine`'s kernels (`"onednn"`, `"fbgemm"`): the
    same int8 weight and scales, in the layout of the kernels that multiply by it; `linear.packed_for` names them
    (set on every product `quantize_dynamic` quantizes: decoding fuses ReLU into a product only where it knows
    the packing takes it; oneDNN's does not dependably, [`zhen.session_modules.relu_fuses`])."""
    with packing_for_engine(engine):
        linear.set_weight_bias(*linear._weight_bias())
    linear.packed_for = engine
    return linear


@contextlib.contextmanager
def packing_for_engine(engine: str):
    """Inside the block PyTorch packs int8 weights for `engine`'s kernels (its quantized engine packs for). The engine
    is a setting of the whole process: one thread's block at a time."""
    with _PACKING:
        previous = torch.backends.quantized.engine
        torch.backends.quantized.engine = engine
        try:
            yield
        finally:
            torch.backends.quantized.engine = previous


def is_quantized(model: nn.Module) -> bool:
    return any(type(m).__module__.startswith("torch.ao.nn.quantized") or isinstance(m, DynamicInt8Linear)
               for m in model.modules())  # fmt: skip


__all__ = ["quantize_dynamic", "quantize_parts", "is_quantized", "pack_for", "DynamicInt8Linear", "RowDispatchedLinear"]
