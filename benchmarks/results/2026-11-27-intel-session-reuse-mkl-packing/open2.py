import sys, time, torch, warnings
import probes
warnings.simplefilter("ignore")
from zhen import ZhenForConditionalGeneration
from zhen.fast_generation import FastDecoder, WeightStamp
import zhen.fast_generation as fg, zhen.layer_steps as ls
torch.set_num_threads(2)
m = ZhenForConditionalGeneration.from_pretrained(sys.argv[1]).eval()
acc = {}
def timed(name, f):
    return probes.timed(acc, name, f)
probes.time_methods(acc, fg.FastDecoder, ["swap_in_lean_modules", "swap_in_session_linears", "__exit__", "__enter__", "layer_steps"])
fg.session_copy = timed("session_copy", fg.session_copy)

ls.sources = timed("sources", ls.sources)
ls.kept_steps = timed("kept_steps", ls.kept_steps)
ls.decoder_layer_steps = timed("decoder_layer_steps", ls.decoder_layer_steps)
ls.scripted = timed("scripted", ls.scripted)
ls.structure = timed("structure", ls.structure)
ls.bind = timed("bind", ls.bind)
fg.release_program = timed("release", fg.release_program)
def one():
    with FastDecoder(m) as d:
        d.layer_steps(True)
for _ in range(5): one()
acc.clear(); n = 200
t = time.perf_counter()
for _ in range(n): one()
print("total us", round((time.perf_counter() - t) / n * 1e6), {k: round(v / n * 1e6) for k, v in acc.items()})
