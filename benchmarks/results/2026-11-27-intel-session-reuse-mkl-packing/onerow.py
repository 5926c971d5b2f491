import sys, time, torch, warnings, gzip, json, importlib.util
from probes import best_us
warnings.simplefilter("ignore")
import zhen.screened_argmax as sa
from zhen import ZhenForConditionalGeneration
spec = importlib.util.spec_from_file_location("old_sa", "/tmp/zhen-base/zhen/screened_argmax.py")
old = importlib.util.module_from_spec(spec); spec.loader.exec_module(old)
old.MIN_PRODUCT = 0
torch.set_num_threads(2)
m = ZhenForConditionalGeneration.from_pretrained(sys.argv[1]).eval()
new_s, old_s = sa.ScreenedArgmax(m.lm_head), old.ScreenedArgmax(m.lm_head)
H = torch.load("/tmp/q/hs.pt") if len(sys.argv) > 2 else None
torch.manual_seed(0)
W = m.lm_head.weight
xs = [W[torch.randint(0, W.shape[0], (1,))] * 8 + torch.randn(1, W.shape[1]) for _ in range(20)]
def t(f, n=200):
    return best_us(f, n)
with torch.inference_mode():
    pairs = [(new_s(x), old_s(x)) for x in xs]
    print("answered", sum(a is not None for a, _ in pairs), "same", all((a is None) == (b is None) and (a is None or torch.equal(a, b)) for a, b in pairs))
    xs = [x for x, (a, _) in zip(xs, pairs) if a is not None]
    for r in range(3):
        print("old (general path) %.0f us, one_row %.0f us, full %.0f us" % (
            sum(t(lambda: old_s(x)) for x in xs[:5]) / 5, sum(t(lambda: new_s(x)) for x in xs[:5]) / 5,
            sum(t(lambda: torch.nn.functional.linear(x, W).argmax(-1)) for x in xs[:5]) / 5))
from torch.profiler import profile, ProfilerActivity
with torch.inference_mode(), profile(activities=[ProfilerActivity.CPU]) as p:
    for _ in range(100): new_s(xs[0])
print(p.key_averages().table(sort_by="self_cpu_time_total", row_limit=25, max_name_column_width=35))
import cProfile, pstats
with torch.inference_mode():
    pr = cProfile.Profile(); pr.enable()
    for _ in range(300): new_s(xs[0])
    pr.disable()
pstats.Stats(pr).sort_stats("tottime").print_stats(12)
