import time, torch, statistics, sys
torch.set_num_threads(2)
lp = torch.ops.mkldnn._linear_pointwise
def t(f):
    s = time.perf_counter(); f(); return time.perf_counter() - s
V, D = int(sys.argv[1]), int(sys.argv[2])
w = torch.randn(V, D); wt = w.t().contiguous()
for rows in [int(r) for r in sys.argv[3].split(",")]:
    x = torch.randn(rows, D); p = torch.rand(rows, V); buf = torch.empty(rows, V); gi = torch.empty(rows, D); gw = torch.zeros(V, D); gwt = torch.zeros(D, V)
    xt = x.t().contiguous()
    cases = {"fwd": (lambda: torch.mm(x, w.t(), out=buf), lambda: lp(x, w, None, "none", [], "")),
             "dh": (lambda: torch.mm(p, w, out=gi), lambda: lp(p, wt, None, "none", [], "")),
             "dw": (lambda: gw.addmm_(p.t(), x), lambda: gwt.addmm_(xt, p))}
    for name, (m, o) in cases.items():
        m(); o(); tm = []; to = []; ratios = []
        for i in range(10):
            if i % 2: a = t(m); b = t(o)
            else: b = t(o); a = t(m)
            tm.append(a); to.append(b); ratios.append(a / b)
        fl = 2 * rows * D * V
        print(f"rows {rows} {name}: mkl {fl/min(tm)/1e9:.0f} alt {fl/min(to)/1e9:.0f}  median mkl/alt {statistics.median(ratios):.2f}", flush=True)
