import time, torch, statistics
for th in (1, 2):
    torch.set_num_threads(th)
    for mb in (1, 4, 16, 32, 64, 128, 256):
        x = torch.ones(mb * 2**20 // 2, dtype=torch.bfloat16)
        x.sum()
        ts = []
        for _ in range(max(5, 2000 // mb)):
            s = time.perf_counter(); x.sum(); ts.append(time.perf_counter() - s)
        t = statistics.median(ts)
        print(f"threads {th} {mb:4d} MB: {mb/1024/t:.1f} GB/s")
