import sys, time, torch, warnings, statistics
warnings.simplefilter("ignore")
torch.set_num_threads(1)
from zhen import ZhenForConditionalGeneration
import zhen.fast_generation as fg, zhen.layer_steps as ls
from zhen.quantization import quantize_dynamic
model = quantize_dynamic(ZhenForConditionalGeneration.from_pretrained("/tmp/s36/small-cpu/model", dtype=torch.float32).eval())
variant = sys.argv[1]
def build_b(s):
    steps = ls.decoder_layer_steps(model.get_decoder())
    steps.__class__ = type("DLS_B", (ls.DecoderLayerSteps,), {})
    prog = torch.jit.script(steps); ls.inline(prog)
    g = prog.graph
    if "passes" in variant:
        torch._C._jit_pass_constant_propagation(g)
        torch._C._jit_pass_peephole(g)
        torch._C._jit_pass_cse(g)
        torch._C._jit_pass_dce(g)
    return prog
def batch(rows):
    x = torch.randint(6, 16000, (rows, 14), generator=torch.Generator().manual_seed(rows)); x[:, 0] = 4; x[:, -1] = 2
    return dict(input_ids=x, attention_mask=torch.ones_like(x), num_beams=1, max_new_tokens=40, min_new_tokens=40)
with torch.inference_mode(), fg.FastDecoder(model, script_layers=True) as s:
    s.generate(**batch(64)); s.generate(**batch(1))
    keys = [k for k in s.programs if k[0] is True]
    A = {k: s.programs[k] for k in keys}
    B = build_b(s)
    print("nodes A", len(list(A[keys[0]].graph.nodes())), "B", len(list(B.graph.nodes())))
    for rows in (1, 2, 4, 16, 64):
        kw = batch(rows)
        outs = {}
        res = {"A": [], "B": []}
        for r in range(7):
            for name in (("A", "B") if r % 2 == 0 else ("B", "A")):
                for k in keys: s.programs[k] = A[k] if name == "A" else B
                t = time.perf_counter(); o = s.generate(**kw); res[name].append(time.perf_counter() - t)
                outs[name] = o
        assert torch.equal(outs["A"], outs["B"])
        a, b = statistics.median(res["A"]), statistics.median(res["B"])
        print(f"rows {rows}: A {a*1e3/40:.3f} B {b*1e3/40:.3f} ms/step, A/B {a/b:.3f}", flush=True)
