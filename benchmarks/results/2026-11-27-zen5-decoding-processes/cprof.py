import os, sys, cProfile, pstats, torch, warnings
warnings.filterwarnings("ignore")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from common import zhen_model, source_batches
from zhen.fast_generation import FastDecoder
torch.set_num_threads(1)
model = zhen_model("base", "prenorm", "sdpa", 0.0).eval()
if sys.argv[1] == "int8":
    from zhen.quantization import quantize_dynamic
    model = quantize_dynamic(model)
b = source_batches(32, 32, 32000)[0]
with torch.inference_mode(), FastDecoder(model) as dec:
    g = lambda: dec.generate(b["input_ids"], b["attention_mask"], forced_bos_token_id=5, num_beams=int(sys.argv[2]), max_new_tokens=32, min_new_tokens=32)
    g()
    pr = cProfile.Profile(); pr.enable(); g(); pr.disable()
st = pstats.Stats(pr); st.sort_stats("tottime").print_stats(22)
