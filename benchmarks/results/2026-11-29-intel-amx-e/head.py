import statistics, time, torch
torch.set_num_threads(2)
bf = torch.bfloat16
lp = torch.ops.mkldnn._linear_pointwise
evict = [torch.randn(2048, 512, dtype=bf) for _ in range(40)]
w = torch.randn(32000, 512, dtype=bf) * 0.02
pk = torch.ops.mkldnn._reorder_linear_weight(w, None)
out = torch.empty(4, 32000)
for rows in (4, 8):
    x = torch.randn(rows, 512, dtype=bf); out = torch.empty(rows, 32000)
    def now():
        return out.copy_(lp(x, pk, None, "none", [], ""))
    def wf():
        xt = torch.empty(512, rows, dtype=bf).copy_(x.t())
        return out.copy_(torch.mm(w, xt).t())
    def wf_nocopy():
        xt = torch.empty(512, rows, dtype=bf).copy_(x.t())
        return torch.mm(w, xt)
    assert torch.equal(now().clone(), wf())
    v = {"lp + copy": now, "mm + transposing copy": wf, "mm alone": wf_nocopy}
    t = {k: [] for k in v}
    for r in range(150):
        for k, f in v.items():
            for e in evict: e.sum()
            s = time.perf_counter(); f(); t[k].append(time.perf_counter() - s)
    print(rows, "  ".join(f"{k}: {statistics.median(ts)*1e6:.0f} us" for k, ts in t.items()))
