import time, torch, statistics
torch.set_num_threads(2)
lp = torch.ops.mkldnn._linear_pointwise
def t(f):
    s = time.perf_counter(); f(); return time.perf_counter() - s
w = torch.randn(32000, 512)
for rows in (512, 1024):
    x = torch.randn(rows, 512); p = torch.rand(rows, 32000); buf = torch.empty(rows, 32000); gi = torch.empty(rows, 512)
    cases = {"fwd": (lambda: torch.mm(x, w.t(), out=buf), lambda: lp(x, w, None, "none", [], "")),
             "dh": (lambda: torch.mm(p, w, out=gi), lambda: lp(p, w.t(), None, "none", [], ""))}
    for name, (m, o) in cases.items():
        m(); o(); tm = []; to = []; ratios = []
        for i in range(12):
            if i % 2: a = t(m); b = t(o)
            else: b = t(o); a = t(m)
            tm.append(a); to.append(b); ratios.append(a / b)
        fl = 2 * rows * 512 * 32000
        print(f"rows {rows} {name}: mkl {fl/min(tm)/1e9:.0f} onednn {fl/min(to)/1e9:.0f}  median mkl/onednn {statistics.median(ratios):.2f}", flush=True)
