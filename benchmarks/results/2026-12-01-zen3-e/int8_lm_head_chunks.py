import time, torch
torch.set_num_threads(1)
torch.manual_seed(0)
V, D, R = 16000, 256, 64
w = torch.randn(V, D) * 0.05
x = torch.randn(R, D)
def packed(wt):
    wq = torch.quantize_per_channel(wt, wt.abs().amax(1) / 127, torch.zeros(wt.shape[0], dtype=torch.long), 0, torch.qint8)
    return torch.ops.quantized.linear_prepack(wq, None)
full = packed(w)
def best(f, n=50):
    f(); b = 1e9
    for _ in range(n):
        t = time.perf_counter(); f(); b = min(b, time.perf_counter() - t)
    return b * 1e3
lin = lambda p: torch.ops.quantized.linear_dynamic(x, p, True)
print("full product", best(lambda: lin(full)))
print("full + argmax", best(lambda: lin(full).argmax(1)))
for c in (500, 1000, 2000, 4000):
    ps = [packed(w[i:i + c]) for i in range(0, V, c)]
    def chunked():
        best_v = None
        for p in ps:
            m = lin(p).max(1)
        return m
    print("chunks", c, best(chunked))
# evict caches between calls: touch 64 MB
junk = torch.randn(16 << 20)
def cold(f):
    def g():
        junk.add_(1.0)
        return f()
    return g
print("cold full + argmax", best(cold(lambda: lin(full).argmax(1))) - best(lambda: junk.add_(1.0)))
ps = [packed(w[i:i + 1000]) for i in range(0, V, 1000)]
print("cold chunks 1000", best(cold(lambda: [lin(p).max(1) for p in ps])) - best(lambda: junk.add_(1.0)))
