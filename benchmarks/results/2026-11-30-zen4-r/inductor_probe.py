"""Can torch.compile (inductor, with this machine's gcc) take the int8 session's decoder layers' step and cut the
per-operation cost of a few-row step? small-cpu int8, one thread, greedy forced 40 tokens."""
import sys, time, warnings, statistics, torch
warnings.simplefilter("ignore")
torch.set_num_threads(1)
from zhen import ZhenForConditionalGeneration
import zhen.fast_generation as fg, zhen.layer_steps as ls
from zhen.quantization import quantize_dynamic
model = quantize_dynamic(ZhenForConditionalGeneration.from_pretrained("/tmp/s36/small-cpu/model", dtype=torch.float32).eval())
def batch(rows):
    x = torch.randint(6, 16000, (rows, 14), generator=torch.Generator().manual_seed(rows)); x[:, 0] = 4; x[:, -1] = 2
    return dict(input_ids=x, attention_mask=torch.ones_like(x), num_beams=1, max_new_tokens=40, min_new_tokens=40)
with torch.inference_mode(), fg.FastDecoder(model, script_layers=True) as s:
    s.generate(**batch(1))
    keys = [k for k in s.programs if k[0] is True]
    A = {k: s.programs[k] for k in keys}
    steps = ls.decoder_layer_steps(model.get_decoder())
    t0 = time.perf_counter()
    B = torch.compile(steps, dynamic=True)
    for k in keys: s.programs[k] = B
    try:
        out_b = s.generate(**batch(1))
    except Exception as e:
        print("compile failed:", type(e).__name__, str(e)[:600]); sys.exit()
    print(f"first compiled call {time.perf_counter()-t0:.1f} s", flush=True)
    for rows in (1, 4):
        kw = batch(rows); res = {"A": [], "B": []}; outs = {}
        s.generate(**kw)
        for r in range(5):
            for name in (("A", "B") if r % 2 == 0 else ("B", "A")):
                for k in keys: s.programs[k] = A[k] if name == "A" else B
                t = time.perf_counter(); outs[name] = s.generate(**kw); res[name].append(time.perf_counter() - t)
        a, b = statistics.median(res["A"]), statistics.median(res["B"])
        print(f"rows {rows}: TorchScript {a*1e3/40:.3f} inductor {b*1e3/40:.3f} ms/step ({a/b:.2f}x), same ids {torch.equal(outs['A'], outs['B'])}", flush=True)
