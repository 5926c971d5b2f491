"""A bf16 session's products: every one in bf16 (old) against few rows of small weights in float32 (new, the default)."""
from zhen import layer_steps

DEFAULT = layer_steps.BF16_SMALL_WEIGHT


def use_old():
    layer_steps.BF16_SMALL_WEIGHT = 0


def use_new():
    layer_steps.BF16_SMALL_WEIGHT = DEFAULT


VARIANTS = {"old": use_old, "new": use_new}
