import statistics, time, torch, sys
torch.set_num_threads(2)
bf = torch.bfloat16
lp = torch.ops.mkldnn._linear_pointwise
V, D, F, layers = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rows = int(sys.argv[5])
shapes = []
for l in range(layers):
    shapes += [(3 * D, D), (D, D), (D, D), (D, D), (F, D), (D, F)]
lw = [torch.ops.mkldnn._reorder_linear_weight((torch.randn(o, i) * 0.05).to(bf), None) for o, i in shapes]
w16 = (torch.randn(V, D) * 0.05).to(bf)
pk = torch.ops.mkldnn._reorder_linear_weight(w16, None)
xs = {i: torch.randn(rows, i).to(bf) for i in (D, F)}
x = xs[D]
# equality over many inputs
eq = True
for s in range(50):
    h = (torch.randn(rows, D) * 3).to(bf)
    a = lp(h, pk, None, "none", [], "")
    b = torch.mv(w16, h[0])[None] if rows == 1 else (w16 @ h.t()).t()
    eq &= torch.equal(a, b)
print("bitwise equal over 50 inputs:", eq)
heads = {"packed": lambda: lp(x, pk, None, "none", [], ""),
         "mv/weight-first": (lambda: torch.mv(w16, x[0])) if rows == 1 else (lambda: w16 @ x.t())}
t = {k: [] for k in heads}; tot = {k: [] for k in heads}
for r in range(60):
    for k in (list(heads) if r % 2 else list(heads)[::-1]):
        for step in range(3):
            s0 = time.perf_counter()
            for s, p in zip(shapes, lw): lp(xs[s[1]], p, None, "none", [], "")
            s1 = time.perf_counter(); heads[k](); s2 = time.perf_counter()
        t[k].append(s2 - s1); tot[k].append(s2 - s0)
ratio = statistics.median([a / b for a, b in zip(t["packed"], t["mv/weight-first"])])
print(f"V={V} D={D} rows={rows}: head in a step: " + ", ".join(f"{k} {statistics.median(v)*1e6:.0f}us" for k, v in t.items()) + f"; packed/new paired {ratio:.3f}; step totals " + ", ".join(f"{k} {statistics.median(v)*1e3:.2f}ms" for k, v in tot.items()))
