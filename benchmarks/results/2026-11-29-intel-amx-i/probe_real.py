"""Real beam-4 steps of a trained checkpoint: how many candidates the beam screen keeps and how loose its bound is."""
import sys, gzip, json, statistics, torch
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast, translate, screened_argmax, fast_generation
model_dir, tok_dir = sys.argv[1], sys.argv[2]
torch.set_num_threads(2)
model = ZhenForConditionalGeneration.from_pretrained(model_dir).eval()
tok = ZhenTokenizerFast.from_pretrained(tok_dir)
screened_argmax.MIN_WEIGHT = 0; screened_argmax.FEW_ROWS_MIN_WEIGHT = 0; fast_generation.BF16_SCREENED_HEAD = 0
screened_argmax.ScreenedArgmax.few_rows_weight = lambda self: self.fbgemm_weight
stats = []
orig = screened_argmax.ScreenedArgmax.top_log_probs
def wrapped(self, hidden, running, keep, banned=None):
    est, unit, bound = self.estimates(hidden, self.fbgemm_weight if 2*len(hidden) <= 8 else None, refined=True)
    z = hidden @ self.weight.T
    actual = ((est.float() * unit) - z).abs().amax(-1)
    out = orig(self, hidden, running, keep, banned)
    full = torch.log_softmax(z, -1)
    if banned is not None: full[:, banned] = -float("inf")
    rec = dict(rows=len(hidden), bound=(bound * unit).flatten().tolist(), actual=actual.tolist(), declined=out is None)
    if out is not None:
        fin = torch.isfinite(out)
        rec["cands"] = int(fin.sum()) / len(hidden)
        rec["err"] = float((out[fin] - full[fin]).abs().max())
        a = fast_generation.top_continuations(out, running, keep); b = fast_generation.top_continuations(full, running, keep)
        rec["same"] = all(torch.equal(x, y) for x, y in zip(a[1:], b[1:]))
        if not rec["same"]:
            missing = [(int(bb), int(t)) for bb, t in zip(b[1].flatten(), b[2].flatten()) if not torch.isfinite(out.view(-1, out.shape[-1])[bb if len(hidden) > 1 else 0, t])]
            print("differs: screened", a[0].tolist(), a[2].tolist(), "full", b[0].tolist(), b[2].tolist(), "missing", missing)
    stats.append(rec)
    return out
screened_argmax.ScreenedArgmax.top_log_probs = wrapped
rows = [json.loads(l) for l in gzip.open("/work/shared/data/tatoeba/valid.jsonl.gz", "rt")][:12]
for r in rows:
    for text, lang in ((r["en"], "zh"), (r["zh"], "en")):
        translate([text], model, tok, tgt_lang=lang, num_beams=4)
n = len(stats); dec = sum(s["declined"] for s in stats)
print("steps", n, "declined", dec)
ok = [s for s in stats if not s["declined"]]
if ok:
    print("candidates/row median", statistics.median(s["cands"] for s in ok), "max", max(s["cands"] for s in ok))
    print("max logprob err", max(s["err"] for s in ok), "all same top", all(s["same"] for s in ok))
print("bound median", statistics.median(b for s in stats for b in s["bound"]), "actual median", statistics.median(a for s in stats for a in s["actual"]))
