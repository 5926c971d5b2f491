"""A small model's LM head in a bf16 session: its bf16 product (now) against the float32 weight's product for one row."""
from zhen.fast_generation import FastDecoder

orig = FastDecoder.swap_in_session_linears
state = {"float32": False}


def swap(self):
    orig(self)
    head = self.model.get_output_embeddings()
    if state["float32"] and hasattr(head, "few_rows"):
        head.few_rows = 1


FastDecoder.swap_in_session_linears = swap


def use_bf16():
    state["float32"] = False


def use_float32():
    state["float32"] = True


VARIANTS = {"bf16": use_bf16, "float32": use_float32}
