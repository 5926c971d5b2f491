import sys, time, statistics, warnings, torch
warnings.simplefilter("ignore")
torch.set_num_threads(2)
from transformers.utils import logging; logging.set_verbosity_error()
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast, translate
from zhen import fast_generation as fg, hardware
from zhen.data import load_parallel
model = ZhenForConditionalGeneration.from_pretrained("/tmp/p/base-random").eval()
tok = ZhenTokenizerFast.from_pretrained("/tmp/p/base-random")
src = [r["en"] for r in load_parallel("../shared/data/tatoeba/valid.jsonl.gz").select(range(16))]
orig = fg.Bf16Linear.bf16
MODE = {"on": False}
def bf16(self, x16, relu=False):
    w = self.linear.weight
    if MODE["on"] and not relu and w.shape[0] * w.shape[1] <= 512 * 512 and x16.numel() // w.shape[1] <= 8:
        mkl = getattr(self, "_mkl", None)
        if mkl is None:
            self._w32 = w.detach().to(torch.bfloat16).float()
            self._b32 = None if self.linear.bias is None else self.linear.bias.detach().to(torch.bfloat16).float()
            mkl = self._mkl = torch.ops.mkl._mkl_reorder_linear_weight(self._w32, 256)
        x = x16.reshape(-1, w.shape[1]).float()
        y = torch.ops.mkl._mkl_linear(x, mkl, self._w32, self._b32, x.shape[0])
        return y.reshape(*x16.shape[:-1], w.shape[0]).to(torch.bfloat16)
    return orig(self, x16, relu)
fg.Bf16Linear.bf16 = bf16
beams = int(sys.argv[1])
def run():
    return [translate([t], model, tok, src_lang="en", tgt_lang="zh", num_beams=beams)[0] for t in src]
modes = ["bf16", "small-mkl"]
times = {m: [] for m in modes}; out = {}
for m in modes:
    MODE["on"] = m == "small-mkl"; out[m] = run()
for _ in range(int(sys.argv[2])):
    for m in modes:
        MODE["on"] = m == "small-mkl"
        t = time.perf_counter(); run(); times[m].append((time.perf_counter() - t) / len(src) * 1e3)
for m, t in times.items(): print(f"beam {beams} {m:10s} best {min(t):.1f} median {statistics.median(t):.1f} ms a call")
print("same:", sum(a == b for a, b in zip(out["bf16"], out["small-mkl"])), "/", len(src))
