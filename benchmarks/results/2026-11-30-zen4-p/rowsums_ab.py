import sys, time, torch, warnings, statistics
warnings.simplefilter("ignore")
sys.path.insert(0, "/work/main/benchmarks")
import common
torch.set_num_threads(1)
from zhen import ZhenForConditionalGeneration
import zhen.fast_generation as fg
from zhen.quantization import quantize_dynamic
model = ZhenForConditionalGeneration.from_pretrained("/tmp/s36/small-cpu/model", dtype=torch.float32).eval()
model = quantize_dynamic(model) if sys.argv[1] == "int8" else model
for rows in (2, 4, 8, 16):
    x = torch.randint(6, 16000, (rows, 20), generator=torch.Generator().manual_seed(rows)); x[:, 0] = 4; x[:, -1] = 2
    kw = dict(input_ids=x, attention_mask=torch.ones_like(x), num_beams=1, max_new_tokens=60, min_new_tokens=60)
    times = {True: [], False: []}
    with torch.inference_mode(), fg.FastDecoder(model, script_layers=True) as s:
        for v in times:
            s.attends_by_row_sums = v; s.generate(**kw)
        for r in range(11):
            for v in ((True, False) if r % 2 == 0 else (False, True)):
                s.attends_by_row_sums = v
                t = time.perf_counter(); s.generate(**kw); times[v].append((time.perf_counter() - t) / 60 * 1e6)
    a, b = statistics.median(times[True]), statistics.median(times[False])
    print(f"{sys.argv[1]} rows {rows}: row sums {a:.0f} us, matmuls {b:.0f} us a step: matmul/rowsums {b / a:.3f}", flush=True)
