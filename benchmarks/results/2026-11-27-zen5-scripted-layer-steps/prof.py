import sys, time, torch, warnings
warnings.filterwarnings("ignore")
from zhen import ZhenConfig, ZhenForConditionalGeneration
from zhen.fast_generation import FastDecoder
torch.set_num_threads(1)
mode, weights, beams = sys.argv[1], sys.argv[2], int(sys.argv[3])
d = 256
cfg = ZhenConfig.from_preset("tiny", vocab_size=16000, d_model=d, encoder_ffn_dim=4*d, decoder_ffn_dim=4*d)
model = ZhenForConditionalGeneration(cfg).eval()
if mode == "int8":
    from zhen.quantization import quantize_dynamic
    model = quantize_dynamic(model)
b = torch.randint(6, 16000, (64, 20))
with torch.inference_mode(), FastDecoder(model, weights=weights) as dec:
    gen = lambda: dec.generate(b, torch.ones_like(b), forced_bos_token_id=5, max_new_tokens=32, min_new_tokens=32, num_beams=beams)
    gen(); gen()
    t=time.perf_counter(); gen(); print("seconds", time.perf_counter()-t)
    with torch.profiler.profile() as p:
        gen()
print(p.key_averages().table(sort_by="self_cpu_time_total", row_limit=25))
