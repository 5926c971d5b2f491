import sys, time, torch, warnings
warnings.simplefilter("ignore")
sys.path.insert(0, "/work/main/benchmarks")
from bench_train import make_batches
from common import zhen_model
from zhen.fast_training import FastTraining
from torch.profiler import profile
torch.set_num_threads(2)
batches = make_batches("base", 4096, 2)
for k in ("sdpa", "matmul"):
    torch.manual_seed(0)
    m = zhen_model("base", variant="prenorm").train()
    f = FastTraining(m, mixed_precision="no", attention_kernel=k)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4, fused=True)
    def step(b):
        loss = f.loss(m, {key: b[key] for key in ("input_ids", "attention_mask", "labels")})
        loss.backward(); opt.step(); opt.zero_grad(set_to_none=True)
    step(batches[0])
    with profile() as p:
        step(batches[1])
    ka = p.key_averages()
    tot = sum(e.self_cpu_time_total for e in ka) / 1e6
    names = ("scaled_dot", "bmm", "baddbmm", "softmax", "_softmax", "masked_fill", "aten::where", "flash")
    att = [(e.key, e.self_cpu_time_total / 1e6, e.count) for e in ka if any(n in e.key for n in names)]
    print(k, f"total {tot:.2f} s; attention-ish ops:")
    for n, t, c in sorted(att, key=lambda r: -r[1])[:10]: print(f"   {n[:60]:60s} {t:.3f} s n={c}")
    print("   sum", round(sum(t for _, t, _ in att), 3))
    nongemm = [(e.key, e.self_cpu_time_total / 1e6, e.count) for e in ka if e.key not in ("aten::mm", "aten::addmm", "aten::addmm_", "mkldnn::_linear_pointwise")]
    print("   non-GEMM total", round(sum(t for _, t, _ in nongemm), 3), "GEMM", round(tot - sum(t for _, t, _ in nongemm), 3))
    for n, t, c in sorted(nongemm, key=lambda r: -r[1])[:14]: print(f"      {n[:58]:58s} {t:.3f} s n={c}")
