import time, torch, statistics
torch.set_num_threads(2)
N, K = 32000, 512
w = torch.randn(N, K).bfloat16()
packed = torch.ops.mkldnn._reorder_linear_weight(w, None)
others = [torch.ops.mkldnn._reorder_linear_weight(torch.randn(2048, 512).bfloat16(), None) for _ in range(48)]  # ~100 MB of other weights
out = torch.empty(4, N)
for n in (4, 64):
    x = torch.randn(n, K).bfloat16(); out = torch.empty(n, N)
    def flush():
        for o in others: torch.ops.mkldnn._linear_pointwise(x, o, None, "none", [], "")
    cands = {"packed+copy": lambda: out.copy_(torch.ops.mkldnn._linear_pointwise(x, packed, None, "none", [], "")),
             "wfirst+copy": lambda: out.copy_((w @ x.t()).t()),
             "wfirst": lambda: (w @ x.t()),
             "packed": lambda: torch.ops.mkldnn._linear_pointwise(x, packed, None, "none", [], "")}
    for flushing in (False, True):
        times = {k: [] for k in cands}
        for _ in range(30):
            for k, f in cands.items():
                if flushing: flush()
                t = time.perf_counter(); f(); times[k].append(time.perf_counter() - t)
        print(n, "flush" if flushing else "hot  ", " ".join(f"{k} {statistics.median(t)*1e3:.2f}" for k, t in times.items()))
