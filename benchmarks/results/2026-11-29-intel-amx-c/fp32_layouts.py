"""The fp32 fused loss's products at a 512-row chunk (32k x 512 head), each layout timed in turns (median of 15)."""
import statistics, time, torch
from zhen import hardware
hardware.keep_freed_memory(large_blocks=True)
torch.set_num_threads(2)
R, V, D = 512, 32000, 512
x = torch.randn(R, D); w = torch.randn(V, D) * 0.05; w_t = w.t().contiguous()
buf = torch.empty(R, V); probs = torch.softmax(x @ w.t(), 1)
gw = torch.zeros(V, D); gwt = torch.zeros(D, V); gi = torch.empty(R, D)
a = torch.randn(2048, 2048)
parts = {
    "square 2048 fp32": lambda: a @ a,
    "logits mm(x, w.t(), out=)": lambda: torch.mm(x, w.t(), out=buf),
    "logits mm(x, w_t, out=)": lambda: torch.mm(x, w_t, out=buf),
    "grad_in mm(probs, w, out=)": lambda: torch.mm(probs, w, out=gi),
    "grad_w addmm_(probs.t(), x)": lambda: gw.addmm_(probs.t(), x),
    "grad_wT addmm_(x.t(), probs)": lambda: gwt.addmm_(x.t(), probs),
    "grad_wT addmm_(xt contig, probs)": lambda: gwt.addmm_(x.t().contiguous(), probs),
}
times = {k: [] for k in parts}
for _ in range(15):
    for k, f in parts.items():
        s = time.perf_counter(); f(); times[k].append(time.perf_counter() - s)
for k, ts in times.items():
    m = statistics.median(ts); fl = 2 * 2048**3 if k.startswith("square") else 2 * R * V * D
    print(f"{k:34s} {m*1e3:7.2f} ms {fl/m/1e9:6.0f} GFLOP/s")
