"""A step's embedding through embed_step (two lookups) against the decoder's embed, taking turns; ms a step."""
import sys, time, torch, warnings, statistics
warnings.simplefilter("ignore")
sys.path.insert(0, "/work/main/benchmarks")
import common
torch.set_num_threads(1)
from zhen import ZhenForConditionalGeneration
import zhen.fast_generation as fg
from zhen.quantization import quantize_dynamic
model = ZhenForConditionalGeneration.from_pretrained(sys.argv[1], dtype=torch.float32).eval()
kind = sys.argv[2]
model = quantize_dynamic(model) if kind == "int8" else model
table = fg.step_position_table
ways = {"embed_step": table, "embed": lambda decoder: None}
for rows in (1, 8, 32):
    x = torch.randint(6, model.config.vocab_size, (rows, 20), generator=torch.Generator().manual_seed(rows)); x[:, 0] = 4; x[:, -1] = 2
    kw = dict(input_ids=x, attention_mask=torch.ones_like(x), num_beams=1, max_new_tokens=40, min_new_tokens=40)
    times = {k: [] for k in ways}
    with torch.inference_mode(), fg.FastDecoder(model, script_layers=True) as s:
        for name in ways:
            fg.step_position_table = ways[name]; s.generate(**kw)
        for r in range(9):
            for name in (ways if r % 2 == 0 else list(reversed(list(ways)))):
                fg.step_position_table = ways[name]
                t = time.perf_counter(); s.generate(**kw); times[name].append((time.perf_counter() - t) / 40 * 1e3)
    a, b = statistics.median(times["embed_step"]), statistics.median(times["embed"])
    print(f"{kind} rows {rows}: embed_step {a:.3f} ms, embed {b:.3f} ms a step: {b / a:.3f}x", flush=True)
