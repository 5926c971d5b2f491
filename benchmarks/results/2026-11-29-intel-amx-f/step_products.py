import statistics, time, torch
torch.set_num_threads(2)
bf = torch.bfloat16
lp = torch.ops.mkldnn._linear_pointwise
shapes = []
for l in range(6):
    shapes += [(1536, 512), (512, 512), (512, 512), (512, 512), (2048, 512), (512, 2048)]
shapes += [(32000, 512)]
pk = [torch.ops.mkldnn._reorder_linear_weight((torch.randn(o, i) * 0.05).to(bf), None) for o, i in shapes]
xs = {i: torch.randn(4, i).to(bf) for i in (512, 2048)}
t = {"layers": [], "head": [], "total": []}
for r in range(40):
    s0 = time.perf_counter()
    for s, p in zip(shapes[:-1], pk[:-1]): lp(xs[s[1]], p, None, "none", [], "")
    s1 = time.perf_counter()
    lp(xs[512], pk[-1], None, "none", [], "")
    s2 = time.perf_counter()
    t["layers"].append(s1 - s0); t["head"].append(s2 - s1); t["total"].append(s2 - s0)
print(" ".join(f"{k} {statistics.median(v)*1e3:.2f}ms" for k, v in t.items()))
t = []
for r in range(40):
    s = time.perf_counter(); lp(xs[512], pk[-1], None, "none", [], ""); t.append(time.perf_counter() - s)
print(f"head alone repeated {statistics.median(t)*1e3:.2f}ms")
t = []
for r in range(40):
    s = time.perf_counter()
    for s_, p in zip(shapes[:-1], pk[:-1]): lp(xs[s_[1]], p, None, "none", [], "")
    t.append(time.perf_counter() - s)
print(f"layers alone repeated {statistics.median(t)*1e3:.2f}ms")
