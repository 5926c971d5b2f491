import sys, time, torch
sys.path.insert(0, "/work/main/benchmarks/results/2026-11-27-intel-session-reuse-mkl-packing")
import zhen, zhen.fast_generation as fg
from probes import checkpoint_and_pairs, timed
m, tok, rows = checkpoint_and_pairs(sys.argv[1]); torch.set_num_threads(2)
T = {}; N = {'step':0}
o = fg.DecoderSteps.step
def step(*a, **k):
    N['step'] += 1; return o(*a, **k)
fg.DecoderSteps.step = timed(T, 'step', step)
texts = [r["en"] for r in rows][:16]
for t in texts[:4]: zhen.translate(t, m, tok, src_lang="en", tgt_lang="zh", num_beams=1)
T.clear(); N['step']=0
t0=time.perf_counter()
out=[zhen.translate(t, m, tok, src_lang="en", tgt_lang="zh", num_beams=1) for t in texts]
tot=time.perf_counter()-t0
print('ms/call', tot/16*1e3, 'steps/call', N['step']/16, 'us/step', T['step']/N['step']*1e6)
print(out[:2])
