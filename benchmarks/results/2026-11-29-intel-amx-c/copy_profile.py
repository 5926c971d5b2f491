import os, sys, collections
import torch
sys.path.insert(0, "/work/main/benchmarks")
from bench_train import build_step, make_batches
torch.set_num_threads(2)
step = build_step("zhen-prenorm-bf16", "base", "fused", None)
batches = make_batches("base", 4096, 2)
for batch in batches:
    step(batch)
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True, with_stack=False) as prof:
    for batch in batches:
        step(batch)
print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=25, max_name_column_width=32))
# copy_ by input shape and dtype
ev = [e for e in prof.events() if e.name == "aten::copy_"]
agg = collections.defaultdict(lambda: [0, 0.0])
for e in ev:
    key = str(e.input_shapes[:2])
    agg[key][0] += 1; agg[key][1] += e.self_cpu_time_total
for k, (c, t) in sorted(agg.items(), key=lambda kv: -kv[1][1])[:15]:
    print(f"{t/1e3:8.1f} ms {c:5d} calls {k}")
# parents of copy_
par = collections.defaultdict(lambda: [0, 0.0])
for e in ev:
    p = e.cpu_parent
    chain = []
    while p is not None and len(chain) < 3:
        chain.append(p.name); p = p.cpu_parent
    par[" < ".join(chain)][0] += 1; par[" < ".join(chain)][1] += e.self_cpu_time_total
for k, (c, t) in sorted(par.items(), key=lambda kv: -kv[1][1])[:12]:
    print(f"{t/1e3:8.1f} ms {c:5d} calls {k}")
