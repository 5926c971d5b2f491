# One stream on one thread: zhen int8 (tiny width) greedy on a batch of 64 (24 source tokens, 32 new) against
# CTranslate2 int8 on the same batch (one thread), then the torch profiler over zhen's call.
import sys, time, tempfile, torch, warnings
warnings.simplefilter("ignore")
sys.path.insert(0, "/work/main/benchmarks")
from common import zhen_model, ZH
from zhen.fast_generation import FastDecoder
from zhen.quantization import quantize_dynamic
from zhen.convert_ctranslate2 import CTranslate2Generator, convert
from torch.profiler import profile
torch.set_num_threads(1)
model = zhen_model("tiny", "prenorm", "sdpa", 0.0).eval()
torch.manual_seed(0)
ids = torch.randint(10, 16000, (64, 24)); mask = torch.ones_like(ids)
kw = dict(forced_bos_token_id=ZH, num_beams=1, max_new_tokens=32, min_new_tokens=32)
out = tempfile.mkdtemp()
convert(model, out, quantization="int8", force=True)
ct2 = CTranslate2Generator(out, compute_type="int8", device="cpu", inter_threads=1, intra_threads=1)
q = quantize_dynamic(model)
def best(f, n=5):
    f(); b = 1e9
    for _ in range(n):
        t = time.perf_counter(); f(); b = min(b, time.perf_counter() - t)
    return b
with torch.inference_mode(), FastDecoder(q) as d:
    z = lambda: d.generate(ids, mask, **kw)
    c = lambda: ct2.generate(ids, mask, ZH, num_beams=1, max_new_tokens=32, min_new_tokens=32)
    for r in range(2):
        print(f"zhen int8 {best(z)*1e3:.1f} ms   CTranslate2 int8 {best(c)*1e3:.1f} ms", flush=True)
    with profile(record_shapes=True) as p:
        z()
print(p.key_averages(group_by_input_shape=True).table(sort_by="self_cpu_time_total", row_limit=25, max_name_column_width=36, max_shapes_column_width=50))
