import sys, time, warnings, torch, io
warnings.simplefilter("ignore")
torch.set_num_threads(1)
from zhen import ZhenForConditionalGeneration
import zhen.layer_steps as ls
import zhen.fast_generation as fg
from zhen.quantization import quantize_dynamic
M = "/tmp/s36/small-cpu/model"
model = ZhenForConditionalGeneration.from_pretrained(M, dtype=torch.float32).eval()
q = quantize_dynamic(model)
with torch.inference_mode(), fg.FastDecoder(q) as s:
    dec = q.get_decoder()
    steps = ls.decoder_layer_steps(dec)
    t = time.perf_counter(); prog = ls.scripted(steps, q); print(f"script {1e3*(time.perf_counter()-t):.0f} ms")
    buf = io.BytesIO()
    t = time.perf_counter()
    try:
        torch.jit.save(prog, buf); print(f"save {1e3*(time.perf_counter()-t):.0f} ms, {len(buf.getvalue())/1e6:.1f} MB")
        buf.seek(0)
        t = time.perf_counter(); loaded = torch.jit.load(buf); print(f"load {1e3*(time.perf_counter()-t):.0f} ms")
        print(type(loaded), [n for n, _ in loaded.named_children()][:3])
    except Exception as e:
        print("save/load failed:", type(e).__name__, str(e)[:300])
