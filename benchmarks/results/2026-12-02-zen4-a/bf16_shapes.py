"""bf16 products at the tiny (d 256, FFN 1024, vocab 16k) training shapes, 2 threads: GFLOP/s of each layout."""
import time, torch
torch.set_num_threads(2)
T = 3200
def rate(f, flops, n=20):
    f(); f()
    best = 1e9
    for _ in range(3):
        s = time.perf_counter()
        for _ in range(n): f()
        best = min(best, (time.perf_counter() - s) / n)
    return flops / best / 1e9, best * 1e3
if __name__ == "__main__":
    a = torch.randn(2048, 2048).bfloat16(); b = torch.randn(2048, 2048).bfloat16()
    print("peak 2048^3 bf16 %.0f GFLOP/s" % rate(lambda: a @ b, 2 * 2048**3)[0])
    for (k, n) in [(256, 768), (256, 256), (256, 1024), (1024, 256), (256, 512), (256, 16000)]:
        x = torch.randn(T, k).bfloat16(); w = torch.randn(n, k).bfloat16(); g = torch.randn(T, n).bfloat16()
        wt = w.t().contiguous()
        fl = 2 * T * k * n
        rows = [("fwd x@w.T", lambda: x @ w.t()), ("fwd x@wt(contig)", lambda: x @ wt),
                ("dgrad g@w", lambda: g @ w), ("wgrad g.T@x", lambda: g.t() @ x), ("wgrad (x.T@g).T", lambda: x.t() @ g)]
        print(f"K={k} N={n}: " + "  ".join("%s %.0f (%.2f ms)" % ((name,) + rate(f, fl)) for name, f in rows))
