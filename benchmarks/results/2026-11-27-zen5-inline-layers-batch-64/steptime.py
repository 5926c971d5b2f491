import sys, time, torch, warnings, statistics as st
warnings.filterwarnings("ignore")
from zhen import ZhenConfig, ZhenForConditionalGeneration
from zhen.fast_generation import FastDecoder
import zhen.fast_generation as fg
torch.set_num_threads(int(sys.argv[4]) if len(sys.argv) > 4 else 1)
d = int(sys.argv[3])
cfg = ZhenConfig.from_preset("small", vocab_size=16000, d_model=d, encoder_ffn_dim=4*d, decoder_ffn_dim=4*d)
model = ZhenForConditionalGeneration(cfg).eval()
if sys.argv[1] == "int8":
    from zhen.quantization import quantize_dynamic
    model = quantize_dynamic(model)
ids = torch.randint(6, 16000, (32, 20)); mask = torch.ones_like(ids)
ts, ls = [], []
orig, origl = fg.DecoderSteps.step, fg.DecoderSteps.logits
def step(self, tokens, position):
    t = time.perf_counter(); r = orig(self, tokens, position); ts.append(time.perf_counter() - t); return r
def logits(self, h):
    t = time.perf_counter(); r = origl(self, h); ls.append(time.perf_counter() - t); return r
fg.DecoderSteps.step = step; fg.DecoderSteps.logits = logits
with torch.inference_mode(), FastDecoder(model, weights=sys.argv[2]) as dec:
    t0 = time.perf_counter()
    for _ in range(6):
        dec.generate(ids, mask, forced_bos_token_id=5, max_new_tokens=32, min_new_tokens=32)
    t1 = time.perf_counter()
print(sys.argv[1:], f"step {st.median(ts[-150:])*1e6:.0f} us, logits {st.median(ls[-150:])*1e6:.0f} us, total per generate {(t1-t0)/6*1e3:.1f} ms")
