import sys, time, torch
sys.path.insert(0, "/work/main/benchmarks/results/2026-11-27-intel-session-reuse-mkl-packing")
import zhen
from probes import checkpoint_and_pairs
m, tok, rows = checkpoint_and_pairs(sys.argv[1]); torch.set_num_threads(2)
texts = [r["en"] for r in rows][:8]
for t in texts: zhen.translate(t, m, tok, src_lang="en", tgt_lang="zh", num_beams=int(sys.argv[2]))
from torch.profiler import profile, ProfilerActivity
with profile(activities=[ProfilerActivity.CPU]) as p:
    for t in texts: zhen.translate(t, m, tok, src_lang="en", tgt_lang="zh", num_beams=int(sys.argv[2]))
top = {}; tt = {}; nf = 0; ftime = 0
for e in p.events():
    if e.name == 'forward': nf += 1; ftime += e.cpu_time_total
    par = e.cpu_parent
    if par is not None and par.name == 'forward':
        top[e.name] = top.get(e.name, 0) + 1; tt[e.name] = tt.get(e.name, 0) + e.cpu_time_total
print('forward calls', nf, 'avg us', ftime/nf)
print(sorted(((k, round(v/nf,1), round(tt[k]/top[k],2)) for k,v in top.items()), key=lambda x:-x[1]))
print('top-level ops per forward', sum(top.values())/nf)
print(p.key_averages().table(sort_by="self_cpu_time_total", row_limit=30))
kids = {}
for e in p.events():
    par = e.cpu_parent
    if par is not None and par.cpu_parent is not None and par.cpu_parent.name == 'forward' and par.name in ('aten::mul','aten::matmul','aten::embedding_bag','aten::layer_norm','aten::reshape','aten::select','aten::copy_','aten::add'):
        kids.setdefault(par.name, {}); kids[par.name][e.name] = kids[par.name].get(e.name, 0) + 1
print(kids)
