"""zhen.translate greedy on real text with a trained checkpoint: the screen on and off, taking turns; same outputs."""
import sys, time, json, gzip, warnings
warnings.simplefilter("ignore")
import torch
import zhen
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast, fast_generation
from zhen.screened_argmax import ScreenedArgmax
path, test, limit, per_call = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
torch.set_num_threads(2)
m = ZhenForConditionalGeneration.from_pretrained(path).eval(); tok = ZhenTokenizerFast.from_pretrained(path)
rows = [json.loads(l) for l in gzip.open(test, "rt")][:limit]
stats = {"answered": 0, "declined": 0}
orig = ScreenedArgmax.__call__
def counted(self, h, banned=None):
    r = orig(self, h, banned); stats["declined" if r is None else "answered"] += 1; return r
ScreenedArgmax.__call__ = counted
def run(src, tgt, screen):
    fast_generation.screen_works = (lambda: True) if screen else (lambda: False)
    texts = [r[src] for r in rows]
    t = time.perf_counter()
    if per_call == 0:
        out = zhen.translate(texts, m, tok, tgt_lang=tgt, num_beams=1)
    else:
        out = [o for i in range(0, len(texts), per_call) for o in zhen.translate(texts[i:i + per_call], m, tok, tgt_lang=tgt, num_beams=1)]
    return time.perf_counter() - t, out
for src, tgt in (("en", "zh"), ("zh", "en")):
    run(src, tgt, True); run(src, tgt, False)
    best = {True: 1e9, False: 1e9}; outs = {}
    for r in range(3):
        for screen in (False, True):
            s, outs[screen] = run(src, tgt, screen)
            best[screen] = min(best[screen], s)
    n = len(rows) if per_call == 0 else len(rows) // per_call
    print(f"{src}->{tgt} greedy, {len(rows)} texts, {'all in one call' if per_call == 0 else f'{per_call} a call'}: "
          f"screen off {best[False]*1000/ (n if per_call else 1):.1f} ms{' a call' if per_call else ''}, on {best[True]*1000/(n if per_call else 1):.1f} "
          f"({best[False]/best[True]:.2f}x); same translations: {outs[True] == outs[False]}")
print("screen answered", stats["answered"], "declined", stats["declined"])
