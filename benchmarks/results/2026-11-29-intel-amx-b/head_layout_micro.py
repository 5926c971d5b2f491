import time, torch, statistics
torch.set_num_threads(2)
for (N, K) in ((32000, 512), (2048, 512), (512, 2048), (512, 512)):
    w = torch.randn(N, K).bfloat16()
    packed = torch.ops.mkldnn._reorder_linear_weight(w, None)
    res = []
    for n in (1, 4, 64, 256):
        x = torch.randn(n, K).bfloat16()
        cands = {"packed": lambda: torch.ops.mkldnn._linear_pointwise(x, packed, None, "none", [], ""),
                 "F.linear": lambda: torch.nn.functional.linear(x, w),
                 "w@x.t()": lambda: (w @ x.t()).t()}
        times = {k: [] for k in cands}
        for f in cands.values(): f()
        for _ in range(40 if n < 64 else 15):
            for k, f in cands.items():
                t = time.perf_counter(); f(); times[k].append(time.perf_counter() - t)
        res.append(f"n={n}: " + " ".join(f"{k} {statistics.median(t)*1e3:.3f}" for k, t in times.items()))
    print(f"W {N}x{K}:", " | ".join(res))
