import torch, time
import sys; torch.set_num_threads(int(sys.argv[1]))
def bench(f, n=300):
    for _ in range(20): f()
    t = time.perf_counter()
    for _ in range(n): f()
    return (time.perf_counter() - t) / n * 1e3
for (o, i) in [(16000, 256), (1024, 256), (256, 1024), (768, 256), (256, 256), (32000, 512), (2048, 512), (512, 512)]:
    w = torch.randn(o, i) * 0.05; b = torch.zeros(o)
    p32 = torch.ops.mkldnn._reorder_linear_weight(w, None)
    for rows in (1, 4):
        x = torch.randn(rows, i)
        mk = torch.ops.mkl._mkl_reorder_linear_weight(w, rows)
        a = bench(lambda: torch.ops.mkldnn._linear_pointwise(x, p32, b, "none", [], ""))
        c = bench(lambda: torch.nn.functional.linear(x, w, b))
        d = bench(lambda: torch.ops.mkl._mkl_linear(x, mk, w, b, rows))
        print(f"{o}x{i} rows {rows}: oneDNN packed {a*1000:.0f} us  F.linear {c*1000:.0f} us  MKL packed {d*1000:.0f} us")
