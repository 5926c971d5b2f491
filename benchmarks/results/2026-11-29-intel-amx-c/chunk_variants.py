"""One bf16 loss chunk (2,048 rows, 32k vocab, d 512): variants taking turns, median of rounds."""
import statistics, sys, time
import torch
from zhen import hardware
print("heap", hardware.keep_freed_memory(large_blocks=True))
torch.manual_seed(0)
R, V, D = 2048, 32000, 512
x = torch.randn(R, D, dtype=torch.bfloat16)
w = (torch.randn(V, D) * 0.05).to(torch.bfloat16)
gw = torch.zeros(V, D)
buf = torch.empty(R, V, dtype=torch.bfloat16)
buft = torch.empty(V, R, dtype=torch.bfloat16)
softmax_out = torch.ops.aten._softmax.out

def v0():
    logits = x @ w.t()
    probs = torch.softmax(logits, 1)
    gi = probs @ w
    gw.add_(probs.t() @ x)
    return probs

def v1():  # logits into a kept buffer, softmax in place
    logits = torch.mm(x, w.t(), out=buf)
    probs = softmax_out(logits, 1, False, out=logits)
    gi = probs @ w
    gw.add_(probs.t() @ x)
    return probs

def v2():  # + contiguous w.T (one copy per forward, counted here per chunk)
    wt = w.t().contiguous()
    logits = torch.mm(x, wt, out=buf)
    probs = softmax_out(logits, 1, False, out=logits)
    gi = probs @ w
    gw.add_(probs.t() @ x)
    return probs

def v3():  # weight-first: logits transposed (vocab, rows), softmax over dim 0
    lt = torch.mm(w, x.t(), out=buft)
    probs_t = softmax_out(lt, 0, False, out=lt)
    gi = probs_t.t() @ w
    gw.add_(probs_t @ x)
    return probs_t.t()

def v4():  # v1 but softmax allocating
    logits = torch.mm(x, w.t(), out=buf)
    probs = torch.softmax(logits, 1)
    gi = probs @ w
    gw.add_(probs.t() @ x)
    return probs

variants = dict(v0=v0, v1=v1, v2=v2, v3=v3, v4=v4)
ref = v0().float()
for k, f in variants.items():
    print(k, "max |dp|", (f().float() - ref).abs().max().item())
rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 10
times = {k: [] for k in variants}
for _ in range(rounds):
    for k, f in variants.items():
        s = time.perf_counter(); f(); times[k].append(time.perf_counter() - s)
base = statistics.median(times["v0"])
for k, ts in times.items():
    m = statistics.median(ts)
    print(f"{k} median {m*1e3:7.1f} ms  ratio to v0 {base/m:5.2f}x")
