import torch, time, statistics, sys
sys.path.insert(0, ".")
from zhen.fast_generation import argmax, Workspace
torch.set_num_threads(2)
def med(f, n=2000):
    for _ in range(50): f()
    ts=[]
    for _ in range(n):
        s=time.perf_counter(); f(); ts.append(time.perf_counter()-s)
    return statistics.median(ts)*1e6
for V in (16000, 32000):
    x = torch.randn(1, V).bfloat16(); ws = Workspace()
    print(V, "copy+argmax helper %.1f us" % med(lambda: argmax(ws.copy("logits", x, torch.float32))))
    print(V, "argmax helper on bf16 %.1f us" % med(lambda: argmax(x)))
    print(V, "torch.argmax bf16 %.1f us" % med(lambda: x.argmax(-1)))
    xf = x.float()
    print(V, "torch.argmax f32 %.1f us" % med(lambda: xf.argmax(-1)))
    print(V, "copy only %.1f us" % med(lambda: ws.copy("logits", x, torch.float32)))
    assert torch.equal(argmax(x), argmax(x.float())) and torch.equal(x.argmax(-1), xf.argmax(-1))
