import torch, time, warnings
warnings.simplefilter("ignore")
def best(f, n=50):
    for _ in range(5): f()
    b = 1e9
    for _ in range(n):
        t = time.perf_counter(); f(); b = min(b, time.perf_counter() - t)
    return b * 1e6
torch.manual_seed(0)
for (N, K) in ((768, 256), (256, 256), (1024, 256), (256, 1024), (16000, 256), (1536, 512), (512, 512), (2048, 512), (512, 2048)):
    w = torch.randn(N, K) * 0.05
    qw = torch.quantize_per_channel(w, w.abs().amax(1) / 127, torch.zeros(N, dtype=torch.long), 0, torch.qint8)
    packed = torch.ops.quantized.linear_prepack(qw, torch.zeros(N))
    for rows in (64, 16):
        x = torch.randn(rows, K)
        r = []
        for th in (1, 2):
            torch.set_num_threads(th)
            r.append(best(lambda: torch.ops.quantized.linear_dynamic(x, packed, True)))
        print(N, K, rows, "1 thread %.0f us  2 threads %.0f us  speedup %.2f" % (r[0], r[1], r[0] / r[1]))
