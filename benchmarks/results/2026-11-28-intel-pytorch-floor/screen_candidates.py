import sys, time, torch
sys.path.insert(0, "/work/main/benchmarks/results/2026-11-27-intel-session-reuse-mkl-packing")
import zhen, zhen.screened_argmax as sa
from probes import checkpoint_and_pairs, best_us
m, tok, rows = checkpoint_and_pairs(sys.argv[1]); torch.set_num_threads(2)
stats = []; inputs = []
orig = sa.ScreenedArgmax.one_row
def one_row(self, row, banned):
    t = time.perf_counter(); r = orig(self, row, banned); stats.append((time.perf_counter()-t)*1e6)
    inputs.append((self, row.clone(), banned)); return r
sa.ScreenedArgmax.one_row = one_row
texts = [r["en"] for r in rows][:16]
for t in texts: zhen.translate(t, m, tok, src_lang="en", tgt_lang="zh", num_beams=1)
print("one_row calls", len(stats), "median us", sorted(stats)[len(stats)//2])
sa.ScreenedArgmax.one_row = orig
counts = []
for s, row, banned in inputs[::10]:
    magnitude = row.abs(); l1 = float(magnitude.sum()); step = float(magnitude.max())/127
    quantized = torch.round(row / step); unit = step * s.scale
    est = torch._int_mm(quantized.to(torch.int8)[None], s.int8_weight)[0]
    weight_error = min(l1 * s.scale / 2, float(row.norm()) * s.max_error_l2)
    hidden_error = min(step * s.half_max_l1, float((row - quantized * step).norm()) * s.max_l2)
    margin = (2 * sa.SLACK * (weight_error + hidden_error) + 1e-5 * l1 * s.max_weight) / unit
    blocks = sa._blocks(est[None])[0]; bb = blocks.amax(-1); floor = float(bb.max()) - margin
    kept = (bb >= floor).nonzero()[:, 0]; ntok = int((blocks[kept] >= floor).sum())
    srt = est.sort(descending=True).values.float()
    counts.append((len(kept), ntok, round(float(srt[0]-srt[1]),1), round(margin,1), round(weight_error/unit,1), round(hidden_error/unit,1)))
print(counts)
s, row, banned = inputs[len(inputs)//2]
print("one_row us", best_us(lambda: orig(s, row, banned), 100))
