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
"""

import functools

import torch
from torch import nn


CHUNK = 64  # vocabulary positions screened as one block: whole blocks are dropped by their largest estimate
MAX_CANDIDATE_BLOCKS = 64  # per row on average; beyond that the screen saves too little and the full product decides
MIN_PRODUCT = 1 << 23  # rows x vocabulary x width below which the screen's small operations cost more than it saves,
MIN_WEIGHT = 3 << 20  # unless the weight is this large: a step of a few rows reads it all, and a quarter of it pays
SLACK = 1.01  # on the bound: float32 rounding of the estimates and of the logits themselves
LOWEST = torch.iinfo(torch.int32).min


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

    def __call__(self, hidden: torch.Tensor, banned: int | None = None) -> torch.LongTensor | None:
        """The argmax token of each row of `hidden` (`(rows, d_model)` float32), never `banned`; None where the screen
        leaves too many candidates, or the product is too small for the screen to pay (compute it in full instead)."""
        rows = len(hidden)
        if rows == 0 or rows * self.weight.numel() < MIN_PRODUCT and self.weight.numel() < MIN_WEIGHT:
            return None
        return self.one_row(hidden[0], banned) if rows == 1 else self.many_rows(hidden, banned)

    def many_rows(self, hidden: torch.Tensor, banned: int | None) -> torch.LongTensor | None:
        """The screen of each row of `hidden`, `(rows,)`, or None where a row has too many candidates."""
        rows, vocab = len(hidden), self.weight.shape[0]
        step = hidden.abs().amax(-1, keepdim=True).clamp_min(torch.finfo(torch.float32).tiny) / 127
        quantized = torch.round(hidden / step)
        unit = step * self.scale  # what one unit of the int8 product's sums is worth, per row
        estimate = torch._int_mm(quantized.to(torch.int8), self.int8_weight)
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


def _blocks(estimate: torch.Tensor) -> torch.Tensor:
    rows, vocab = estimate.shape
    if vocab % CHUNK:
        lowest = LOWEST if estimate.dtype == torch.int32 else -torch.inf
        estimate = nn.functional.pad(estimate, (0, CHUNK - vocab % CHUNK), value=lowest)
    return estimate.view(rows, -1, CHUNK)


@functools.cache
def screen_works() -> bool:
    """Whether this PyTorch multiplies int8 matrices on the CPU (`torch._int_mm`)."""
    try:
        torch._int_mm(torch.ones(1, 8, dtype=torch.int8), torch.ones(8, 8, dtype=torch.int8))
    except (RuntimeError, AttributeError, NotImplementedError):
        return False
    return True
