import sys, time, torch, warnings, statistics as st
warnings.filterwarnings("ignore")
from zhen import ZhenConfig, ZhenForConditionalGeneration
from zhen.fast_generation import FastDecoder
torch.set_num_threads(2)
preset, mode, weights, d = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
streams = int(sys.argv[5]) if len(sys.argv) > 5 else 2
cfg = ZhenConfig.from_preset(preset, vocab_size=16000, d_model=d, encoder_ffn_dim=4*d, decoder_ffn_dim=4*d)
model = ZhenForConditionalGeneration(cfg).eval()
if mode == "int8":
    from zhen.quantization import quantize_dynamic
    model = quantize_dynamic(model)
batches = [torch.randint(6, 16000, (32, 20)) for _ in range(8)]
def run(inline):
    with torch.inference_mode(), FastDecoder(model, weights=weights, inline_layers=inline) as dec:
        t0 = time.perf_counter()
        outs = list(dec.map(lambda b: dec.generate(b, torch.ones_like(b), forced_bos_token_id=5, max_new_tokens=32, min_new_tokens=32), batches, streams=streams))
        return outs, 8 * 32 * 32 / (time.perf_counter() - t0)
run(False); run(True)
ra, rb = [], []
for r in range(4):
    a = run(False); b = run(True); ra.append(a[1]); rb.append(b[1])
    assert all(torch.equal(x, y) for x, y in zip(a[0], b[0]))
print(sys.argv[1:], "modules", [round(x) for x in ra], "inline", [round(x) for x in rb], f"ratio {st.median(rb)/st.median(ra):.3f}")
