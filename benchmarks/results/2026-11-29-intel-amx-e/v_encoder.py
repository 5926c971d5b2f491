"""One text's encoder in a bf16 session: the layers' forwards under bf16 autocast (old) against the layers' program
(new, the default)."""
from zhen.fast_generation import FastDecoder

new = FastDecoder.encoder_steps


def old(self, device):
    return None if self.weights == "bf16" else new(self, device)


def use_old():
    FastDecoder.encoder_steps = old


def use_new():
    FastDecoder.encoder_steps = new


VARIANTS = {"old": use_old, "new": use_new}
