import sys, time, torch, warnings, statistics as st, resource, ctypes, os
warnings.filterwarnings("ignore")
if len(sys.argv) > 4 and sys.argv[4] == "arena1":
    ctypes.CDLL("libc.so.6").mallopt(-8, 1)  # M_ARENA_MAX
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
torch.set_num_threads(2)
def run(streams):
    with torch.inference_mode(), FastDecoder(model, weights=weights) as dec:
        one = lambda b: dec.generate(b, torch.ones_like(b), forced_bos_token_id=5, max_new_tokens=32, min_new_tokens=32, num_beams=beams)
        f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        t0 = time.perf_counter()
        list(dec.map(one, batches, streams=streams))
        return 8 * 64 * 32 / (time.perf_counter() - t0), resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0
run(2)
r = [run(2) for _ in range(3)]
print(sys.argv[1:], "2 streams %.0f tok/s, page faults per run %s" % (st.median(x[0] for x in r), [x[1] for x in r]))
