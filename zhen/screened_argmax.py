"""Greedy search's next token without the full float32 LM head product.

An int8 product of the hidden state and the LM head's weight (each quantized to int8: a scale per hidden row, one for
the weight) estimates every
logit to within a bound known from the two quantizations; the tokens whose estimate comes within twice that bound of
the best estimate are the only ones that can hold the largest logit, and float32 products of those few decide. The
token is the full float32 product's argmax (ties: the first), up to float32 rounding between logits that differ by
less than it. On a CPU an int8 product (`torch._int_mm`) runs 3-4x faster than float32's at a decoding step's shape,
and reads a quarter of the bytes of the 32k x 512 weight.

The bound, for a row `h` of hidden state quantized as `t * q` and a vocabulary row `w` quantized as `s * p`:

    |h . w - t s (q . p)|  <=  |h . (w - s p)| + |(h - t q) . s p|

each term bounded by the smaller of two products of norms: `||h||_1 s / 2` (rounding to the nearest integer leaves at
most half a step in each coordinate) or `||h||_2 ||w - s p||_2`, and `t ||s p||_1 / 2` or `||h - t q||_2 ||s p||_2`;
the vocabulary's largest `||s p||_1`, `||w - s p||_2`, `||s p||_2` stand for every row's.

`torch._int_mm` packs the weight anew at every call of more than one row, which costs more than the product itself at
a few rows; there FBGEMM's product of a weight it packed once gives the same sums (see [`fbgemm_sums`]), of 8-bit
hidden values where its kernels sum them exactly (`zhen.hardware`'s `int8_full_range`), else of 7-bit ones. Where
`torch._int_mm` runs a plain loop (`zhen.hardware`'s `int8_matmul` off: AVX2 CPUs such as AMD Zen 3), every screen
multiplies through FBGEMM, and none runs without it.
"""

import functools
import sys
import warnings

import torch
from torch import nn

from . import hardware


CHUNK = 64  # vocabulary positions screened as one block: whole blocks are dropped by their largest estimate
MAX_CANDIDATE_BLOCKS = 64  # per row on average; beyond that the screen saves too little and the full product decides
MIN_PRODUCT = 1 << 23  # rows x vocabulary x width below which the screen's small operations cost more than it saves,
MIN_WEIGHT = 3 << 20  # unless the weight is this large: a step of a few rows reads it all, and a quarter of it pays
# A bf16 session screens LM heads of at least this many weights, where the int8 product's saving on the bf16 one
# outweighs the screen's small operations (README, Performance)
BF16_MIN_WEIGHT = 8 << 20
SLACK = 1.01  # on the bound: float32 rounding of the estimates and of the logits themselves
LOWEST = torch.iinfo(torch.int32).min
FEW_ROWS = 8  # up to this many rows FBGEMM's product of its packed weight beats `torch._int_mm` (README, Performance)
# ... where the weight is this large: on smaller ones the 7-bit values' wider bound costs more candidates than it saves
# (8-bit values keep `_int_mm`'s bound, so any weight the screen runs on)
FEW_ROWS_MIN_WEIGHT = 8 << 20
# With VNNI's kernels and no AMX (whose tiles `_int_mm` may use), FBGEMM's product beats `_int_mm`'s up to this many
# rows, or up to `VNNI_WIDE_FEW_ROWS` at widths of `VNNI_WIDE` or more (README, Performance)
VNNI_FEW_ROWS, VNNI_WIDE_FEW_ROWS, VNNI_WIDE = 16, 64, 512
# Few-row screens a screen runs with `torch._int_mm` before FBGEMM packs its weight: packing the base vocabulary's
# takes ~100 ms, what about this many of `_int_mm`'s calls pay more than FBGEMM's (so a one-off call never pays it).
PACK_AFTER = 256
# FBGEMM's kernels without VNNI add pairs of uint8 x int8 products in int16: hidden values of 7 bits cannot overflow it.
FBGEMM_LEVELS = 63


class ScreenedArgmax:
    """`argmax(hidden @ linear.weight.T + linear.bias)` of float32 CPU rows, screened by an int8 product (see the
    module docstring). Holds the int8 copy of the weight (a quarter of its float32 size), quantized with one scale for
    the whole weight, so that the int8 product's int32 sums rank each row's tokens as they are; the float32 weight
    itself is read for the few tokens that survive the screen.

    Args:
        linear (`nn.Linear`): the LM head, float32 on the CPU; its weight must not change while this is used.
    """

    def __init__(self, linear: nn.Linear):
        weight = linear.weight.detach()
        self.weight = weight
        self.bias = None if linear.bias is None else linear.bias.detach()
        self.scale = float(weight.abs().max().clamp_min(torch.finfo(torch.float32).tiny)) / 127
        quantized = torch.round(weight / self.scale).clamp_(-127, 127)
        self.int8_weight = quantized.to(torch.int8).t()  # (d_model, vocab): `torch._int_mm`'s right operand
        dequantized = quantized * self.scale
        self.max_error_l2 = float((weight - dequantized).norm(dim=1).max())
        self.half_max_l1 = float(dequantized.abs().sum(1).max()) / 2
        self.max_l2 = float(dequantized.norm(dim=1).max())
        self.max_weight = float(weight.abs().max())
        machine = hardware.current()
        self.int_mm = machine.int8_matmul == "on"  # else FBGEMM's product alone: `torch._int_mm` is a plain loop
        self.few_rows = fbgemm_rows(weight.shape[1], machine)
        self.few_row_screens = 0

    def few_rows_weight(self):
        """[`fbgemm_weight`] once this screen has run `PACK_AFTER` screens of a few rows (at once without a fast
        `torch._int_mm`), else None."""
        self.few_row_screens += 1
        pack_after = PACK_AFTER if self.int_mm else 0
        return self.fbgemm_weight if self.few_row_screens > pack_after else None

    @functools.cached_property
    def fbgemm_weight(self):
        """The int8 weight packed once for FBGEMM's product ([`fbgemm_sums`]) of hidden values of
        `self.fbgemm_levels`, or None where FBGEMM is off (`zhen.hardware`) or cannot give exact sums here, or the
        weight is under `FEW_ROWS_MIN_WEIGHT`, the hidden values would take 7 bits, and `torch._int_mm` is fast."""
        machine, width = hardware.current(), self.weight.shape[1]
        eight_bits = machine.int8_full_range == "on" and exact_in_float32(width, 127)
        self.fbgemm_levels = 127 if eight_bits else FBGEMM_LEVELS
        small = self.fbgemm_levels == FBGEMM_LEVELS and self.weight.numel() < FEW_ROWS_MIN_WEIGHT
        if machine.fbgemm == "off" or small and self.int_mm:
            return None
        return fbgemm_packed(self.int8_weight.t(), self.fbgemm_levels)

    def __call__(self, hidden: torch.Tensor, banned: int | None = None) -> torch.LongTensor | None:
        """The argmax token of each row of `hidden` (`(rows, d_model)` float32), never `banned`; None where the screen
        leaves too many candidates, or the product is too small for the screen to pay (compute it in full instead)."""
        rows = len(hidden)
        if rows == 0 or rows * self.weight.numel() < MIN_PRODUCT and self.weight.numel() < MIN_WEIGHT:
            return None
        return self.one_row(hidden[0], banned) if rows == 1 and self.int_mm else self.many_rows(hidden, banned)

    def many_rows(self, hidden: torch.Tensor, banned: int | None) -> torch.LongTensor | None:
        """The screen of each row of `hidden`, `(rows,)`, or None where a row has too many candidates."""
        rows, vocab = len(hidden), self.weight.shape[0]
        packed = self.few_rows_weight() if rows <= self.few_rows else None
        if packed is None and not self.int_mm:
            return None
        levels = 127 if packed is None else self.fbgemm_levels
        step = hidden.abs().amax(-1, keepdim=True).clamp_min(torch.finfo(torch.float32).tiny) / levels
        quantized = torch.round(hidden / step)
        unit = step * self.scale  # what one unit of the int8 product's sums is worth, per row
        if packed is None:
            estimate = torch._int_mm(quantized.to(torch.int8), self.int8_weight)
        else:
            estimate = fbgemm_sums(quantized, packed, levels)
        if self.bias is not None:
            estimate = estimate + self.bias / unit
        if banned is not None:
            estimate[:, banned] = LOWEST if estimate.dtype == torch.int32 else -torch.inf
        l1 = hidden.abs().sum(-1, keepdim=True)
        weight_error = torch.minimum(l1 * (self.scale / 2), hidden.norm(dim=-1, keepdim=True) * self.max_error_l2)
        hidden_error = torch.minimum(step * self.half_max_l1, (hidden - quantized * step).norm(dim=-1, keepdim=True)
                                     * self.max_l2)  # fmt: skip
        margin = (2 * SLACK * (weight_error + hidden_error) + 1e-5 * l1 * self.max_weight) / unit
        blocks = _blocks(estimate)
        block_best = blocks.amax(-1)
        floor = block_best.amax(-1, keepdim=True) - margin
        row_of, block_of = (block_best >= floor).nonzero(as_tuple=True)
        if len(row_of) > MAX_CANDIDATE_BLOCKS * rows:
            return None
        candidate, position = (blocks[row_of, block_of] >= floor[row_of]).nonzero(as_tuple=True)
        row_of, token = row_of[candidate], block_of[candidate] * CHUNK + position
        logits = (hidden[row_of] * self.weight[token]).sum(-1)
        if self.bias is not None:
            logits += self.bias[token]
        best = torch.full((rows,), -torch.inf, device=hidden.device).scatter_reduce(0, row_of, logits, "amax")
        is_best = logits == best[row_of]
        first = torch.full((rows,), vocab, device=hidden.device)
        first = first.scatter_reduce(0, row_of[is_best], token[is_best], "amin")
        return None if bool((first == vocab).any()) else first

    def one_row(self, row: torch.Tensor, banned: int | None) -> torch.LongTensor | None:
        """The screen of one row (a step of one sentence), `(1,)` or None: [`many_rows`]'s bound on Python floats and
        its candidates picked without the scatters that sort them by row, in half the operations, whose cost is most
        of a one-row screen's."""
        magnitude = row.abs()
        l1 = float(magnitude.sum())
        step = max(float(magnitude.max()), torch.finfo(torch.float32).tiny) / 127
        quantized = torch.round(row / step)
        unit = step * self.scale
        estimate = torch._int_mm(quantized.to(torch.int8)[None], self.int8_weight)[0]
        if self.bias is not None:
            estimate = estimate + self.bias / unit
        if banned is not None:
            estimate[banned] = LOWEST if estimate.dtype == torch.int32 else -torch.inf
        weight_error = min(l1 * self.scale / 2, float(row.norm()) * self.max_error_l2)
        hidden_error = min(step * self.half_max_l1, float((row - quantized * step).norm()) * self.max_l2)
        margin = (2 * SLACK * (weight_error + hidden_error) + 1e-5 * l1 * self.max_weight) / unit
        blocks = _blocks(estimate[None])[0]
        block_best = blocks.amax(-1)
        floor = float(block_best.max()) - margin
        kept = (block_best >= floor).nonzero()[:, 0]
        if not 0 < len(kept) <= MAX_CANDIDATE_BLOCKS:
            return None
        block, position = (blocks[kept] >= floor).nonzero(as_tuple=True)
        token = kept[block] * CHUNK + position
        logits = (row * self.weight[token]).sum(-1)
        if self.bias is not None:
            logits += self.bias[token]
        return token[logits.argmax()].view(1)  # tokens ascend: the first of equal logits, as `argmax`


def fbgemm_rows(width: int, machine: hardware.Hardware) -> int:
    """The most rows a screen multiplies by FBGEMM's packing of its weight rather than by `torch._int_mm`: more on a
    CPU whose int8 kernels are VNNI's without AMX tiles ([`VNNI_FEW_ROWS`]), every row where `torch._int_mm` is a
    plain loop (`int8_matmul` off)."""
    if machine.int8_matmul == "off":
        return sys.maxsize
    if machine.int8_full_range == "on" and machine.amx_int8 == "off":
        return VNNI_WIDE_FEW_ROWS if width >= VNNI_WIDE else VNNI_FEW_ROWS
    return FEW_ROWS


def _blocks(estimate: torch.Tensor) -> torch.Tensor:
    rows, vocab = estimate.shape
    if vocab % CHUNK:
        lowest = LOWEST if estimate.dtype == torch.int32 else -torch.inf
        estimate = nn.functional.pad(estimate, (0, CHUNK - vocab % CHUNK), value=lowest)
    return estimate.view(rows, -1, CHUNK)


def fbgemm_sums(quantized: torch.Tensor, packed, levels: int = FBGEMM_LEVELS) -> torch.Tensor:
    """The integer sums `quantized @ weight.T` as float32, for `quantized` holding integers in [-levels, levels]
    (float32) and `packed` from [`fbgemm_packed`]: FBGEMM's int8 product with input scale 1, zero point `levels + 1`
    (it multiplies uint8 inputs) and weight scale 1, whose float output is the int32 sum itself (exact below 2**24,
    which [`fbgemm_packed`] checks the width for). Levels over 63 need kernels that sum 8 bits exactly
    (`zhen.hardware`'s `int8_full_range`)."""
    product = torch.ops.quantized.linear_with_input_q_dq_qweight_dq_output_fp32
    return hardware.packed_product(product, quantized, 1.0, levels + 1, packed)


def exact_in_float32(width: int, levels: int) -> bool:
    """Whether every sum of `width` products of hidden values up to `levels` and weights up to 127 is a float32
    integer."""
    return width * levels * 127 < 1 << 24


def fbgemm_packed(int8_rows: torch.Tensor, levels: int = FBGEMM_LEVELS):
    """`int8_rows` (`(vocab, d_model)` int8) packed for [`fbgemm_sums`] of hidden values in [-levels, levels], or
    None where this PyTorch's quantized engine is not FBGEMM's (the product would refuse the packing) or the width
    lets a sum exceed float32's exact integers."""
    width = int8_rows.shape[1]
    if not exact_in_float32(width, levels):
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # PyTorch announces quantized tensors' move to torchao
            weight = torch._make_per_tensor_quantized_tensor(int8_rows.contiguous(), 1.0, 0)
        packed = torch.ops.quantized.linear_prepack(weight, None)
        fbgemm_sums(torch.zeros(2, width), packed, levels)
    except (RuntimeError, AttributeError, NotImplementedError):
        return None
    return packed


def screen_pays(machine: hardware.Hardware) -> bool:
    """Whether a screen has a fast int8 product here: `torch._int_mm`'s kernels, or FBGEMM's where that is a plain
    loop (`int8_matmul` off); and PyTorch multiplies int8 matrices at all ([`screen_works`])."""
    return (machine.int8_matmul == "on" or machine.fbgemm == "on") and screen_works()


@functools.cache
def screen_works() -> bool:
    """Whether this PyTorch multiplies int8 matrices on the CPU (`torch._int_mm`)."""
    try:
        torch._int_mm(torch.ones(1, 8, dtype=torch.int8), torch.ones(8, 8, dtype=torch.int8))
    except (RuntimeError, AttributeError, NotImplementedError):
        return False
    return True
