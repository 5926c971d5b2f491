import sys, time, torch, warnings, statistics as st
warnings.filterwarnings("ignore")
from zhen import ZhenConfig, ZhenForConditionalGeneration
from zhen.fast_generation import FastDecoder
import zhen.fast_generation as fg
torch.set_num_threads(1)
preset, mode, weights, d = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
cfg = ZhenConfig.from_preset(preset, vocab_size=16000, d_model=d, encoder_ffn_dim=4*d, decoder_ffn_dim=4*d)
model = ZhenForConditionalGeneration(cfg).eval()
if mode == "int8":
    from zhen.quantization import quantize_dynamic
    model = quantize_dynamic(model)
ids = torch.randint(6, 16000, (32, 20)); mask = torch.ones_like(ids)
ts = []
orig = fg.DecoderSteps.step
def step(self, tokens, position):
    t = time.perf_counter(); r = orig(self, tokens, position); ts.append(time.perf_counter() - t); return r
fg.DecoderSteps.step = step
def run(inline):
    ts.clear()
    with torch.inference_mode(), FastDecoder(model, weights=weights, inline_layers=inline) as dec:
        for _ in range(4):
            out = dec.generate(ids, mask, forced_bos_token_id=5, max_new_tokens=32, min_new_tokens=32)
    return st.median(ts)
a, b = [], []
for r in range(3):
    a.append(run(False)); b.append(run(True))
print(sys.argv[1:], f"modules {min(a)*1e6:.0f} inline {min(b)*1e6:.0f} us")
