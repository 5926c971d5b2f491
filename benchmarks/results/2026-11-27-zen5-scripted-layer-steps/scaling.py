import sys, time, torch, warnings, statistics as st
warnings.filterwarnings("ignore")
from zhen import ZhenConfig, ZhenForConditionalGeneration
from zhen.fast_generation import FastDecoder
mode, weights, beams = sys.argv[1], sys.argv[2], int(sys.argv[3])
d = 256
cfg = ZhenConfig.from_preset("tiny", vocab_size=16000, d_model=d, encoder_ffn_dim=4*d, decoder_ffn_dim=4*d)
model = ZhenForConditionalGeneration(cfg).eval()
if mode == "int8":
    from zhen.quantization import quantize_dynamic
    model = quantize_dynamic(model)
batches = [torch.randint(6, 16000, (64, L)) for L in (31, 27, 24, 21, 18, 15, 12, 9)]
def run(streams, threads):
    torch.set_num_threads(threads)
    with torch.inference_mode(), FastDecoder(model, weights=weights) as dec:
        one = lambda b: dec.generate(b, torch.ones_like(b), forced_bos_token_id=5, max_new_tokens=32, min_new_tokens=32, num_beams=beams)
        t0 = time.perf_counter()
        list(dec.map(one, batches, streams=streams))
        return 8 * 64 * 32 / (time.perf_counter() - t0)
run(1, 1); run(2, 2)
r1 = [run(1, 1) for _ in range(3)]; r2 = [run(2, 2) for _ in range(3)]
print(sys.argv[1:], "1 stream 1 thread %.0f, 2 streams %.0f, ratio %.2f" % (st.median(r1), st.median(r2), st.median(r2) / st.median(r1)))
