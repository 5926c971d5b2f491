import torch, time
torch.set_num_threads(1)
flush = torch.zeros(12 << 20)
def bench(f, n=30, cold=True):
    tot = 0
    for i in range(n + 3):
        if cold: flush.add_(1.0)
        t = time.perf_counter(); f(); dt = time.perf_counter() - t
        if i >= 3: tot += dt
    return round(tot / n * 1e6)
rows, h, d, L, maxlen = 64, 4, 64, 40, 60
for dt in (torch.float32, torch.bfloat16):
    cache = torch.randn(rows, h, maxlen, 1, d).to(dt)
    V = cache[:, :, :L].reshape(rows, h, L, d)
    K = V
    q = torch.randn(rows, h, 1, d).to(dt)
    p = torch.randn(rows, h, 1, L).softmax(-1).to(dt)
    flat = cache.view(-1, d)
    idx = (torch.arange(rows*h)[:, None] * maxlen + torch.arange(L)).view(-1)
    off = torch.arange(0, rows*h*L, L)
    try:
        eb = lambda: torch.embedding_bag(flat, idx, off, False, 0, False, p.reshape(-1))[0]
        eb()
        e = (bench(eb, cold=False), bench(eb))
    except Exception as ex:
        e = str(ex)[:60]
    print(dt, "scores bmm hot/cold", bench(lambda: torch.matmul(q, K.transpose(-1, -2)), cold=False), bench(lambda: torch.matmul(q, K.transpose(-1, -2))),
          "| values bmm", bench(lambda: torch.matmul(p, V), cold=False), bench(lambda: torch.matmul(p, V)), "| embbag", e)
