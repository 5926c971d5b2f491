"""Attention's products over float32 caches as FBGEMM's weighted row sums (on, the default with FBGEMM) or batched
matmuls (off), one text a call."""
from zhen.fast_generation import FastDecoder

orig = FastDecoder.__init__


def init_with(row_sums):
    def init(self, *args, **kwargs):
        orig(self, *args, **kwargs)
        self.attends_by_row_sums = self.attends_by_row_sums and row_sums
    return init


def use_on():
    FastDecoder.__init__ = init_with(True)


def use_off():
    FastDecoder.__init__ = init_with(False)


VARIANTS = {"on": use_on, "off": use_off}
