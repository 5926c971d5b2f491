import time, torch
torch.set_num_threads(1)
W = torch.randn(16000, 256) * 0.05
scales = W.abs().amax(1).double() / 127
qw = torch.quantize_per_channel(W, scales, torch.zeros(16000, dtype=torch.long), 0, torch.qint8)
def bench(f, n=30):
    for _ in range(3): f()
    best = 1e9
    for _ in range(n):
        t = time.perf_counter(); f(); best = min(best, time.perf_counter() - t)
    return best * 1e3
res = {}
for engine in ("fbgemm", "onednn"):
    torch.backends.quantized.engine = engine
    packed = torch.ops.quantized.linear_prepack(qw, None)
    for rows in (8, 16, 32, 64, 128):
        x = torch.randn(rows, 256)
        for rr in (True, False):
            res[engine, rows, rr] = bench(lambda: torch.ops.quantized.linear_dynamic(x, packed, rr))
for rows in (8, 16, 32, 64, 128):
    g = 2 * rows * 256 * 16000 / 1e9
    print(rows, " ".join(f"{e}{'-7bit' if rr else '-8bit'} {res[e, rows, rr]:.2f}ms ({g/res[e, rows, rr]*1e3:.0f} GOPS)" for e in ("fbgemm", "onednn") for rr in (True, False)))
