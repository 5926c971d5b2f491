import sys, time, torch, warnings, collections
warnings.simplefilter("ignore")
sys.path.insert(0, "/work/main/benchmarks")
from bench_train import build_step, make_batches
from torch.profiler import profile
torch.set_num_threads(2)
batches = make_batches("base", 4096, 3)
step = build_step("zhen-prenorm-fp32-matmul-attnsdpa", "base", "fused", None)  # the path before e08e4d0
step(batches[0]); step(batches[1])
with profile(record_shapes=True) as p:
    step(batches[1])
rows = collections.defaultdict(lambda: [0, 0.0, 0.0])
tot_t = tot_f = 0
for e in p.events():
    if e.name not in ("aten::mm", "aten::addmm", "aten::addmm_", "aten::bmm"): continue
    sh = e.input_shapes
    if e.name == "aten::mm": a, b = sh[0], sh[1]
    else: a, b = sh[1], sh[2]
    if e.name == "aten::bmm": f = 2 * a[0] * a[1] * a[2] * b[2]
    else: f = 2 * a[0] * a[1] * b[1]
    key = (e.name, tuple(a), tuple(b))
    r = rows[key]; r[0] += 1; r[1] += e.self_cpu_time_total / 1e6; r[2] += f
    tot_t += e.self_cpu_time_total / 1e6; tot_f += f
for k, (n, t, f) in sorted(rows.items(), key=lambda kv: -kv[1][1])[:40]:
    print(f"{k[0]:14s} {str(k[1]):16s} x {str(k[2]):16s} n={n:3d} {t:7.3f} s  {f/t/1e9:6.1f} GFLOP/s")
print(f"total GEMM {tot_t:.2f} s {tot_f/1e12:.3f} TFLOP  {tot_f/tot_t/1e9:.1f} GFLOP/s")
