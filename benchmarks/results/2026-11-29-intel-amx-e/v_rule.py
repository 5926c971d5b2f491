"""Which weights a bf16 session multiplies in float32 at few rows: up to 2^18 elements at up to 9 x 2^18 multiply-adds
(cap18, the default) against up to 2^16 elements at up to 64 rows (cap16)."""
from zhen import layer_steps


def cap18():
    layer_steps.BF16_SMALL_WEIGHT, layer_steps.BF16_FEW_ROW_MACS = 1 << 18, 9 << 18


def cap16():
    layer_steps.BF16_SMALL_WEIGHT, layer_steps.BF16_FEW_ROW_MACS = 1 << 16, 64 << 16


VARIANTS = {"cap18": cap18, "cap16": cap16}
