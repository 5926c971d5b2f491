import statistics, sys, time
import torch
from zhen import hardware
hardware.keep_freed_memory(large_blocks=True)
torch.manual_seed(0)
R, V, D = 2048, 32000, 512
x = torch.randn(R, D, dtype=torch.bfloat16)
w = (torch.randn(V, D) * 0.05).to(torch.bfloat16)
wt = w.t().contiguous()
gw = torch.zeros(V, D)
buf = torch.empty(R, V, dtype=torch.bfloat16)
buf2 = torch.empty(R, V, dtype=torch.bfloat16)
gwb = torch.empty(V, D, dtype=torch.bfloat16)
sm = torch.ops.aten._softmax.out
probs = torch.softmax(x @ w.t(), 1)
xt = x.t().contiguous()
pt = probs.t().contiguous()
a = torch.randn(2048, 2048, dtype=torch.bfloat16)
parts = {
 "square2048": lambda: a @ a,
 "logits alloc": lambda: x @ w.t(),
 "logits out": lambda: torch.mm(x, w.t(), out=buf),
 "logits wt out": lambda: torch.mm(x, wt, out=buf),
 "softmax alloc": lambda: torch.softmax(buf, 1),
 "softmax out": lambda: sm(buf, 1, False, out=buf2),
 "grad_in alloc": lambda: probs @ w,
 "grad_w alloc": lambda: probs.t() @ x,
 "grad_w out": lambda: torch.mm(probs.t(), x, out=gwb),
 "gw.add_(bf16)": lambda: gw.add_(gwb),
 "max": lambda: probs.max(1),
 "amax": lambda: probs.amax(1),
 "amax logits": lambda: buf.amax(1),
 "grad_wT x.t()@p": lambda: x.t() @ probs,
 "grad_wT xt@p": lambda: xt @ probs,
 "grad_w pt@x": lambda: pt @ x,
 "transpose p": lambda: probs.t().contiguous(),
}
rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 10
times = {k: [] for k in parts}
for _ in range(rounds):
    for k, f in parts.items():
        s = time.perf_counter(); f(); times[k].append(time.perf_counter() - s)
sq = statistics.median(times["square2048"])
print(f"square 2048 bf16: {2*2048**3/sq/1e9:.0f} GFLOP/s")
for k, ts in times.items():
    m = statistics.median(ts)
    print(f"{k:16s} {m*1e3:7.1f} ms" + (f"  {2*R*V*D/m/1e9:6.0f} GFLOP/s" if k.startswith(("logits", "grad")) else ""))
