import sys, time, os, threading, warnings
import torch
sys.path.insert(0, "/work/main/benchmarks")
warnings.simplefilter("ignore")
from common import zhen_model, source_batches, SIZES, ZH
from zhen.quantization import quantize_dynamic
from zhen import fast_generation as fg

size = os.environ.get("SIZE", "base")
precision = os.environ.get("P", "int8")
model = zhen_model(size, "prenorm", "sdpa", 0.0).eval()
if precision == "int8":
    model = quantize_dynamic(model)
for p in model.parameters(): p.requires_grad_(False)
batches = source_batches(128, 32, SIZES[size]["vocab"])

TRACE = []
class StepModule(torch.nn.Module):
    def __init__(self, steps):
        super().__init__(); self.decoder = steps.decoder; self.steps = [steps]
    def forward(self, t, p, b):
        return self.steps[0].run_layers(t, p, b)

def traced_step(self, tokens, position):
    self.tokens.copy_(tokens[:, None]); self.position_ids.fill_(position); self.self_bias[..., position] = 0
    if self.cache.keys[0] is None:
        return self.run_layers(self.tokens, self.position_ids, self.self_bias)
    if getattr(self, "traced", None) is None:
        t0 = time.perf_counter()
        self.traced = torch.jit.trace(StepModule(self), (self.tokens, self.position_ids, self.self_bias), check_trace=False)
        TRACE.append(time.perf_counter() - t0)
    with torch.jit.optimized_execution(False):
        return self.traced(self.tokens, self.position_ids, self.self_bias)
orig_keep = fg.StaticDecoderSteps.keep
def keep(self, *a):
    orig_keep(self, *a); self.traced = None

def run(mode, streams, beams=1):
    torch.set_num_threads(2)
    if mode == "traced":
        fg.StaticDecoderSteps.step = traced_step; fg.StaticDecoderSteps.keep = keep
    with torch.inference_mode(), fg.FastDecoder(model, cuda_graphs=mode != "default") as dec:
        g = lambda b: dec.generate(b["input_ids"], b["attention_mask"], forced_bos_token_id=ZH, num_beams=beams, max_new_tokens=32, min_new_tokens=32)
        outs = list(dec.map(g, batches[:2], streams))
        t = time.perf_counter()
        outs = list(dec.map(g, batches, streams))
        dt = time.perf_counter() - t
    return dt, outs

ref = None
for mode in sys.argv[1].split(","):
    for streams in (1, 2):
        dt, outs = run(mode, streams)
        ids = torch.cat([o.flatten() for o in outs])
        if ref is None: ref = ids
        print(sum(TRACE), len(TRACE)); TRACE.clear()
        print(f"{size} {precision} {mode:8s} streams={streams}: {128*32/dt:7.0f} tok/s  same ids: {torch.equal(ids, ref)}", flush=True)
