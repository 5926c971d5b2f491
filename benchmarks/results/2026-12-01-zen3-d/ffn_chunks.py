# The encoder's feed-forward block (packed oneDNN float32, ReLU fused) on M rows whole against in chunks of rows,
# one thread; with --pair, two threads at once (as two decoding streams), each on its own rows.
import sys, time, threading, torch
torch.set_num_threads(1)
d, f = 512, 2048
w1 = torch.ops.mkldnn._reorder_linear_weight(torch.randn(f, d) * 0.02, None); b1 = torch.randn(f)
w2 = torch.ops.mkldnn._reorder_linear_weight(torch.randn(d, f) * 0.02, None); b2 = torch.randn(d)
lp = torch.ops.mkldnn._linear_pointwise
def ffn(x, chunk):
    if chunk is None or chunk >= x.shape[0]:
        return lp(lp(x, w1, b1, "relu", [], ""), w2, b2, "none", [], "")
    return torch.cat([lp(lp(c, w1, b1, "relu", [], ""), w2, b2, "none", [], "") for c in x.split(chunk)])
def best(fn, n=6):
    fn(); b = 1e9
    for _ in range(n):
        t = time.perf_counter(); fn(); b = min(b, time.perf_counter() - t)
    return b
pair = "--pair" in sys.argv
for M in (1536, 3072, 6144):
    xs = [torch.randn(M, d) for _ in range(2)]
    line = []
    for chunk in (None, 1024, 512, 256):
        if pair:
            res = [0, 0]
            def work(i):
                torch.set_num_threads(1); res[i] = best(lambda: ffn(xs[i], chunk))
            ts = [threading.Thread(target=work, args=(i,)) for i in range(2)]
            [t.start() for t in ts]; [t.join() for t in ts]
            s = max(res); flops = 2 * 2 * M * d * f * 2
        else:
            s = best(lambda: ffn(xs[0], chunk)); flops = 2 * 2 * M * d * f
        line.append(f"{chunk or 'whole'}: {flops / s / 1e9:.1f}")
    print(f"M={M} {'two threads' if pair else 'one thread'} GFLOP/s  " + "  ".join(line), flush=True)
