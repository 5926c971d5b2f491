import os, sys, time, warnings, torch, collections
warnings.simplefilter("ignore")
torch.set_num_threads(1)
exec(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "setup_tatoeba_batches.py")).read())
import zhen.refill as rf
from zhen.pipeline_zhen import default_max_new_tokens
srcs = list(ids)
limits = [default_max_new_tokens(len(x), model.config, model.generation_config) for x in srcs]
bos = tok.get_lang_id(tgt)
share = float(sys.argv[2]) if len(sys.argv) > 2 else 1/8
rf.REFILL_SHARE = share
acc = collections.Counter(); cnt = collections.Counter()
def timed(name, cls, attr):
    f = getattr(cls, attr)
    def g(*a, **k):
        t = time.perf_counter(); r = f(*a, **k); acc[name] += time.perf_counter() - t; cnt[name] += 1; return r
    setattr(cls, attr, g)
timed("refill", rf._Refill, "refill"); timed("step(all)", rf._Refill, "step")
timed("step_rows", fg.DecoderSteps, "step_rows"); timed("next_tokens", fg.DecoderSteps, "next_tokens"); timed("keep", rf._Refill, "keep")
with torch.inference_mode(), fg.FastDecoder(q, script_layers=True) as s:
    rf.refilled_greedy_search(s, srcs, limits, 64, bos)
    for r in range(3):
        acc.clear(); cnt.clear()
        t = time.perf_counter()
        rf.refilled_greedy_search(s, srcs, limits, 64, bos)
        total = time.perf_counter() - t
        print(f"share {share}: total {total*1e3:.0f} ms", {k: (round(v*1e3), cnt[k]) for k, v in acc.items()})
