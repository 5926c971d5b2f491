import sys, time, torch, warnings
warnings.simplefilter("ignore")
sys.path.insert(0, "/work/main/benchmarks")
from bench_train import build_step, make_batches
from torch.profiler import profile
torch.set_num_threads(2)
size = sys.argv[1]
batches = make_batches(size, 4096, 3)
steps = {"pre": build_step("zhen-prenorm-fp32", size, "fused", None), "post": build_step("zhen-postnorm-fp32", size, "fused", None)}
for s in steps.values(): s(batches[0])
tables = {}
for name in ["pre", "post", "post", "pre"]:
    with profile() as p:
        t = time.perf_counter(); steps[name](batches[1]); print(name, round(time.perf_counter() - t, 2), flush=True)
    for e in p.key_averages():
        tables.setdefault(e.key, {}).setdefault(name, [0, 0]); tables[e.key][name][0] += e.self_cpu_time_total / 2e3; tables[e.key][name][1] += e.count / 2
rows = sorted(tables.items(), key=lambda kv: -max(v[0] for v in kv[1].values()))
print(f"{'op':50s} {'pre ms':>9s} {'post ms':>9s} {'pre n':>7s} {'post n':>7s}")
for k, v in rows[:30]:
    pr, po = v.get("pre", [0, 0]), v.get("post", [0, 0])
    print(f"{k[:50]:50s} {pr[0]:9.0f} {po[0]:9.0f} {pr[1]:7.0f} {po[1]:7.0f}")
