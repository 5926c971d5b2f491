import sys, time, warnings, statistics
import torch
warnings.simplefilter("ignore")
from transformers.utils import logging; logging.set_verbosity_error()
import zhen, zhen.fast_generation as fg
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast
torch.set_num_threads(2)
m = ZhenForConditionalGeneration.from_pretrained(sys.argv[1]).eval()
tok = ZhenTokenizerFast.from_pretrained(sys.argv[1])
zhen.translate("Hello.", m, tok, src_lang="en", tgt_lang="zh")
kept = fg._COPIES[m]
parts = [(module, entry[0][0]) for module, entry in kept.items()]
machine = fg.current_hardware()
def old():
    out = []
    for module, make in parts:
        entry = kept.get(module); weights = fg._weights_of(module)
        assert entry[0] == (make, machine) and fg.WeightStamp.all_match(entry[1], weights)
        out.append(entry[2])
    return out
def new():
    return fg.session_copies(parts, kept, {}, machine)
assert all(a is b for a, b in zip(old(), new()))
t = {"old": [], "new": []}
for r in range(400):
    for k, f in ((("old", old), ("new", new)) if r % 2 else (("new", new), ("old", old))):
        s = time.perf_counter(); f(); t[k].append(time.perf_counter() - s)
print(len(parts), "parts", {k: f"{statistics.median(v)*1e6:.0f}us" for k, v in t.items()}, "paired old/new", round(statistics.median([a / b for a, b in zip(t["old"], t["new"])]), 2))
