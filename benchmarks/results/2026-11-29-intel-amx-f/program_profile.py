import sys, time, warnings, statistics, collections
import torch
warnings.simplefilter("ignore")
from transformers.utils import logging; logging.set_verbosity_error()
import zhen, zhen.fast_generation as fg
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast
torch.set_num_threads(2)
path = sys.argv[1]; beams = int(sys.argv[2])
tok = ZhenTokenizerFast.from_pretrained(path)
m = ZhenForConditionalGeneration.from_pretrained(path).eval()

done = {}
orig = fg.DecoderSteps.run_layer_steps
def cap(self, hs, pe, causal=None):
    if causal is None and self.cache.position == 8 and "x" not in done and warm["n"] >= 2:
        done["x"] = 1
        ts = []
        for _ in range(30):
            s = time.perf_counter(); orig(self, hs, pe); ts.append(time.perf_counter() - s)
        print(f"program {statistics.median(ts)*1e3:.2f} ms rows {hs.shape}")
        from torch.profiler import profile
        with profile() as p:
            for _ in range(20): orig(self, hs, pe)
        print(p.key_averages().table(sort_by="self_cpu_time_total", row_limit=30))
    return orig(self, hs, pe, causal)
fg.DecoderSteps.run_layer_steps = cap
warm = {"n": 0}
text = "The quick brown fox jumps over the lazy dog near the river bank."
for _ in range(3):
    zhen.translate(text, m, tok, src_lang="en", tgt_lang="zh", num_beams=beams); warm["n"] += 1
