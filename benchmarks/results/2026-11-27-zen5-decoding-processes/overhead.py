import sys, time, torch, warnings, statistics as st
warnings.filterwarnings("ignore")
from zhen import ZhenConfig, ZhenForConditionalGeneration
from zhen.fast_generation import FastDecoder
import zhen.fast_generation as fg
torch.set_num_threads(1)
cfg = ZhenConfig.from_preset("tiny", vocab_size=64, encoder_layers=6, decoder_layers=6, d_model=64, encoder_attention_heads=8, decoder_attention_heads=8, encoder_ffn_dim=128, decoder_ffn_dim=128)
model = ZhenForConditionalGeneration(cfg).eval()
if sys.argv[1] == "int8":
    from zhen.quantization import quantize_dynamic
    model = quantize_dynamic(model)
ids = torch.randint(6, 64, (1, 8)); mask = torch.ones_like(ids)
orig = fg.DecoderSteps.step
ts = []
def step(self, tokens, position):
    t = time.perf_counter(); r = orig(self, tokens, position); ts.append(time.perf_counter() - t); return r
fg.DecoderSteps.step = step
with torch.inference_mode(), FastDecoder(model, weights=sys.argv[2]) as dec:
    for _ in range(5):
        dec.generate(ids, mask, forced_bos_token_id=5, max_new_tokens=32, min_new_tokens=32)
print(sys.argv[1:], f"overhead per step {st.median(ts[-100:])*1e6:.0f} us")
