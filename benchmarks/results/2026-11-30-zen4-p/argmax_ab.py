import sys, time, torch, warnings, statistics
warnings.simplefilter("ignore")
sys.path.insert(0, "/work/main/benchmarks")
import common
torch.set_num_threads(1)
from zhen import ZhenForConditionalGeneration
import zhen.fast_generation as fg
from zhen.quantization import quantize_dynamic
model = quantize_dynamic(ZhenForConditionalGeneration.from_pretrained("/tmp/s36/small-cpu/model", dtype=torch.float32).eval())
chunked = fg.argmax
def plain(scores, chunk=64): return scores.argmax(-1)
ways = {"chunked": chunked, "torch": plain}
for rows in (1, 2, 4, 8):
    x = torch.randint(6, 16000, (rows, 20), generator=torch.Generator().manual_seed(rows)); x[:, 0] = 4; x[:, -1] = 2
    kw = dict(input_ids=x, attention_mask=torch.ones_like(x), num_beams=1, max_new_tokens=60, min_new_tokens=60)
    times = {k: [] for k in ways}
    with torch.inference_mode(), fg.FastDecoder(model, script_layers=True) as s:
        for name in ways:
            fg.argmax = ways[name]; s.generate(**kw)
        for r in range(11):
            for name in (ways if r % 2 == 0 else list(reversed(list(ways)))):
                fg.argmax = ways[name]
                t = time.perf_counter(); s.generate(**kw); times[name].append((time.perf_counter() - t) / 60 * 1e6)
    a, b = statistics.median(times["chunked"]), statistics.median(times["torch"])
    print(f"rows {rows}: chunked {a:.0f} us, torch.argmax {b:.0f} us a step: torch/chunked {b / a:.3f}", flush=True)
