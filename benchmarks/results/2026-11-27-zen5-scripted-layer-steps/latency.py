import sys, time, warnings, os
warnings.filterwarnings("ignore")
import torch, zhen
from zhen.translation import load_model_and_tokenizer
model, tok = load_model_and_tokenizer(sys.argv[1])
zhen.translate("Warm up, please.", model, tok, tgt_lang="zh")
times = []
for s in ["I love nature.", "Where is the station?", "He has been reading all day.", "Thank you very much."] * 5:
    t = time.perf_counter(); zhen.translate(s, model, tok, tgt_lang="zh"); times.append(time.perf_counter() - t)
times.sort()
print(zhen.__file__, "median %.1f ms, min %.1f ms" % (1000 * times[len(times)//2], 1000 * times[0]))
