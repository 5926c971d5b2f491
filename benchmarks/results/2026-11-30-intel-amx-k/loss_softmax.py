import torch, time, statistics
torch.set_num_threads(2)
import sys; sys.path.insert(0, "."); from zhen import hardware; print(hardware.keep_freed_memory(True))
def med(f, n=7):
    f(); f()
    ts=[]
    for _ in range(n):
        s=time.perf_counter(); f(); ts.append(time.perf_counter()-s)
    return statistics.median(ts)*1e3
x = (torch.randn(2048, 32000) * 3).bfloat16()
xf = x.float()
for r in range(2):
    print("bf16 softmax %.1f ms" % med(lambda: x.softmax(-1)))
    print("bf16 -> f32 softmax %.1f ms" % med(lambda: torch.softmax(x, -1, dtype=torch.float32)))
    print("f32 softmax %.1f ms" % med(lambda: xf.softmax(-1)))
    print("bf16 log_softmax %.1f ms" % med(lambda: x.log_softmax(-1)))
    print("bf16 exp %.1f ms" % med(lambda: x.exp()))
    print("f32 exp %.1f ms" % med(lambda: xf.exp()))
    print("bf16 amax %.1f ms" % med(lambda: x.amax(-1)))
    print("bf16 sub_ %.1f ms" % med(lambda: x.clone()))
