import time, torch
torch.set_num_threads(1)
junk = torch.randn(16 << 20)
def cold(f, n=40):
    ts = []
    for _ in range(n):
        junk.add_(1.0)
        s = time.perf_counter(); f(); ts.append(time.perf_counter() - s)
    ts.sort(); return ts[n // 2] * 1e6
heads, dim, maxlen = 4, 64, 101
for batch in (64, 16):
    cache = torch.randn(batch, heads, maxlen, 1, dim)
    pm = torch.randn(maxlen, batch, heads, dim)
    q = torch.randn(batch, heads, 1, dim)
    for L in (12, 40):
        kk = cache[:, :, :L].reshape(batch, heads, L, dim)
        kp = pm[:L]
        fs = {
            "matmul": lambda: torch.matmul(q, kk.transpose(-1, -2)),
            "mulsum": lambda: (kk * q).sum(-1),
            "pm_mulsum": lambda: (kp * q.view(batch, heads, dim)).sum(-1),
            "pm_bmm": lambda: torch.matmul(q, kp.permute(1, 2, 3, 0)),
        }
        print(batch, L, " ".join(f"{n} {cold(f):.1f}" for n, f in fs.items()), flush=True)
