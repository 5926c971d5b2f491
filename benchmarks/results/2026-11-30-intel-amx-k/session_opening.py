"""What opening and closing a FastDecoder session costs, and the parts of the SessionPlan's check (then a cProfile
of 300 sessions). Usage: session_opening.py CHECKPOINT"""
import os, sys, cProfile, pstats
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import load, median_time
import zhen
import zhen.fast_generation as fg
from zhen.fast_generation import FastDecoder
path = sys.argv[1]
m, tok = load(path, compile_at_once=False)
zhen.translate("I love nature very much.", m, tok, tgt_lang="zh")
def med(f): return median_time(f, 500, warmup=0) * 1e3
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
