import statistics, sys, time
import torch
from zhen import hardware
hardware.keep_freed_memory(large_blocks=True)
torch.manual_seed(0)
M = 3967
bf = torch.bfloat16
rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 10
a = torch.randn(2048, 2048, dtype=bf)
for (i, o) in [(512, 2048), (2048, 512), (512, 1536), (512, 512)]:
    x = torch.randn(M, i, dtype=bf); w = torch.randn(o, i, dtype=bf); b = torch.randn(o, dtype=bf)
    wt = w.t().contiguous(); g = torch.randn(M, o, dtype=bf); gt = g.t().contiguous(); xt = x.t().contiguous()
    parts = {
        "square": lambda: a @ a,
        "fwd addmm(b, x, w.t())": lambda: torch.addmm(b, x, w.t()),
        "fwd addmm(b, x, wt)": lambda: torch.addmm(b, x, wt),
        "fwd mm(x, w.t())": lambda: torch.mm(x, w.t()),
        "dx g @ w": lambda: g @ w,
        "dx g @ wt.t()": lambda: g @ wt.t(),
        "dw g.t() @ x": lambda: g.t() @ x,
        "dwT x.t() @ g": lambda: x.t() @ g,
        "dw gt @ x": lambda: gt @ x,
        "cast w fp32->bf16": None,
    }
    w32 = w.float()
    parts["cast w fp32->bf16"] = lambda: w32.to(bf)
    parts["cast+T w fp32->bf16"] = lambda: w32.t().to(bf, memory_format=torch.contiguous_format)
    times = {k: [] for k in parts}
    for _ in range(rounds):
        for k, f in parts.items():
            s = time.perf_counter(); f(); times[k].append(time.perf_counter() - s)
    fl = 2 * M * i * o
    sq = statistics.median(times["square"])
    print(f"--- {M}x{i} -> {o}   square {2*2048**3/sq/1e9:.0f} GFLOP/s")
    for k, ts in times.items():
        if k == "square": continue
        m = statistics.median(ts)
        print(f"{k:24s} {m*1e3:7.2f} ms" + ("" if "cast" in k else f" {fl/m/1e9:6.0f} GFLOP/s"))
