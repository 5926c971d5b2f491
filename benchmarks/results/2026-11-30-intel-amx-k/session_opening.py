import sys, time, statistics, warnings, cProfile, pstats
import torch
warnings.simplefilter("ignore")
from transformers.utils import logging; logging.set_verbosity_error()
import zhen, zhen.fast_generation as fg
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast
from zhen.fast_generation import FastDecoder
torch.set_num_threads(2)
path = sys.argv[1]
tok = ZhenTokenizerFast.from_pretrained(path)
m = ZhenForConditionalGeneration.from_pretrained(path).eval()
zhen.translate("I love nature very much.", m, tok, tgt_lang="zh")
def med(f, n=500):
    ts=[]
    for _ in range(n):
        s=time.perf_counter(); f(); ts.append(time.perf_counter()-s)
    return statistics.median(ts)*1e3
def sess():
    with FastDecoder(m): pass
print("FastDecoder() %.3f ms" % med(lambda: FastDecoder(m)))
print("open+close %.3f ms" % med(sess))
d = FastDecoder(m)
mods = fg.submodules(m)
plan = fg._PLANS[m]
print("submodules %.3f ms" % med(lambda: fg.submodules(m)))
print("holds %.3f ms" % med(lambda: plan.holds(d, mods)))
print("plan_options %.3f ms" % med(lambda: d.plan_options()))
print("stamps %.3f ms" % med(lambda: all(fg.WeightStamp.all_match(st, fg._weights_of(mod)) for mod, (_, st, _) in plan.copies)))
pr = cProfile.Profile(); pr.enable()
for _ in range(300): sess()
pr.disable()
pstats.Stats(pr).sort_stats("tottime").print_stats(14)
