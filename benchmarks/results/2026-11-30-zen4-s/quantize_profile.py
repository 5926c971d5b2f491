"""cProfile of quantize_parts on the small-cpu model (prepack calls: three per weight before 439e06d, one at size after)."""
import time, torch, warnings, copy, cProfile, pstats
warnings.simplefilter("ignore")
from zhen import ZhenForConditionalGeneration
from zhen.quantization import quantize_parts
m = ZhenForConditionalGeneration.from_pretrained("/tmp/s36/small-cpu/model")
c = copy.deepcopy(m)
pr = cProfile.Profile(); pr.enable()
q = quantize_parts(c.float().eval())
pr.disable()
pstats.Stats(pr).sort_stats("tottime").print_stats(15)
