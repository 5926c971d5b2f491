import statistics, time, torch
torch.set_num_threads(2)
bf = torch.bfloat16
for o in (512, 2048, 8192, 32000, 64000):
    w = torch.randn(o, 512, dtype=bf); p = torch.ops.mkldnn._reorder_linear_weight(w, None); x = torch.randn(4, 512, dtype=bf)
    for _ in range(10): torch.ops.mkldnn._linear_pointwise(x, p, None, "none", [], "")
    ts = []
    for _ in range(200):
        s = time.perf_counter(); torch.ops.mkldnn._linear_pointwise(x, p, None, "none", [], ""); ts.append(time.perf_counter() - s)
    m = statistics.median(ts)
    big = torch.randn(o * 512 // 2)  # same bytes as w
    ts2 = []
    for _ in range(50):
        s = time.perf_counter(); big.sum(); ts2.append(time.perf_counter() - s)
    m2 = statistics.median(ts2)
    print(f"{o:6d}x512 bf16 {w.numel()*2/1e6:6.1f} MB: 4-row product {m*1e6:7.1f} us {w.numel()*2/m/1e9:5.1f} GB/s | sum of the same bytes {m2*1e6:7.1f} us {w.numel()*2/m2/1e9:5.1f} GB/s")
