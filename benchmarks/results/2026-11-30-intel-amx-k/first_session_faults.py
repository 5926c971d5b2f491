import sys, time, warnings, resource
import torch
warnings.simplefilter("ignore")
from transformers.utils import logging; logging.set_verbosity_error()
import zhen, zhen.fast_generation as fg
from zhen import ZhenForConditionalGeneration
from zhen.fast_generation import FastDecoder
torch.set_num_threads(2)
m = ZhenForConditionalGeneration.from_pretrained(sys.argv[1]).eval()
f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
s = time.perf_counter(); d = FastDecoder(m); d.__enter__(); e = time.perf_counter() - s; d.__exit__()
f1 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
print("first enter %.1f ms, %d minor faults" % (e * 1e3, f1 - f0))
