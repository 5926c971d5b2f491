import sys, time, warnings, statistics, collections
import torch
warnings.simplefilter("ignore")
from transformers.utils import logging; logging.set_verbosity_error()
import zhen, zhen.fast_generation as fg
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast
torch.set_num_threads(2)
path = sys.argv[1]; beams = int(sys.argv[2]); passes = sys.argv[3].split(",")
tok = ZhenTokenizerFast.from_pretrained(path)
m = ZhenForConditionalGeneration.from_pretrained(path).eval()
done = {}
orig = fg.DecoderSteps.run_layer_steps
def count(g):
    n = 0
    def walk(block):
        nonlocal n
        for node in block.nodes():
            n += 1
            for b in node.blocks(): walk(b)
    walk(g); return n
def cap(self, hs, pe, causal=None):
    if causal is None and self.cache.position == 4 and "x" not in done and warm["n"] >= 2:
        done["x"] = 1
        ref = orig(self, hs, pe)
        def bench():
            ts = []
            for _ in range(300):
                s = time.perf_counter(); orig(self, hs, pe); ts.append(time.perf_counter() - s)
            return statistics.median(ts)
        g = self.layer_steps.graph
        a = bench(); n0 = count(g)
        for p in passes: getattr(torch._C, "_jit_pass_" + p)(g)
        b = bench(); n1 = count(g)
        a2 = bench()
        out = orig(self, hs, pe)
        print(f"before {a*1e3:.3f} ms after {b*1e3:.3f} / {a2*1e3:.3f} ms ({a/b:.3f}x); nodes {n0} -> {n1}; equal {torch.equal(ref, out)}")
    return orig(self, hs, pe, causal)
fg.DecoderSteps.run_layer_steps = cap
warm = {"n": 0}
text = "The quick brown fox jumps over the lazy dog near the river bank."
for _ in range(3):
    zhen.translate(text, m, tok, src_lang="en", tgt_lang="zh", num_beams=beams); warm["n"] += 1
