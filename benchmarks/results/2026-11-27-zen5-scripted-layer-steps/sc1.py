import sys, time, torch, warnings, statistics as st, contextlib
warnings.filterwarnings("ignore")
from zhen import ZhenConfig, ZhenForConditionalGeneration
from zhen.fast_generation import FastDecoder
torch.set_num_threads(2)
mode, weights, beams = sys.argv[1], sys.argv[2], int(sys.argv[3])
d = 256
cfg = ZhenConfig.from_preset("tiny", vocab_size=16000, d_model=d, encoder_ffn_dim=4*d, decoder_ffn_dim=4*d)
model = ZhenForConditionalGeneration(cfg).eval()
if mode == "int8":
    from zhen.quantization import quantize_dynamic
    model = quantize_dynamic(model)
batches = [torch.randint(6, 16000, (64, L)) for L in (31, 27, 24, 21, 18, 15, 12, 9)]
CONFIGS = {"modules": dict(inline_layers=False), "python": dict(script_layers=False), "script": {}, "script-noopt": {}}
def run(name):
    ctx = torch.jit.optimized_execution(False) if name == "script-noopt" else contextlib.nullcontext()
    with torch.inference_mode(), FastDecoder(model, weights=weights, **CONFIGS[name]) as dec:
        def one(b):
            with (torch.jit.optimized_execution(False) if name == "script-noopt" else contextlib.nullcontext()):
                return dec.generate(b, torch.ones_like(b), forced_bos_token_id=5, max_new_tokens=32, min_new_tokens=32, num_beams=beams)
        t0 = time.perf_counter()
        outs = list(dec.map(one, batches, streams=2))
        return outs, 8 * 64 * 32 / (time.perf_counter() - t0)
for n in CONFIGS: run(n)
rates = {n: [] for n in CONFIGS}
for r in range(3):
    ref = None
    for n in CONFIGS:
        o, rate = run(n); rates[n].append(rate)
        if ref is None: ref = o
        else: assert all(torch.equal(x, y) for x, y in zip(ref, o)), n
print(sys.argv[1:], " ".join(f"{n} {st.median(v):.0f}" for n, v in rates.items()))
