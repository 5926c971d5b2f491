import statistics, time, torch, sys
torch.set_num_threads(2)
bf = torch.bfloat16
lp = torch.ops.mkldnn._linear_pointwise
shapes = []
for l in range(6):
    shapes += [(1536, 512), (512, 512), (512, 512), (512, 512), (2048, 512), (512, 2048)]
layers = [torch.ops.mkldnn._reorder_linear_weight((torch.randn(o, i) * 0.05).to(bf), None) for o, i in shapes]
head = (torch.randn(32000, 512) * 0.05).to(bf)
whole = torch.ops.mkldnn._reorder_linear_weight(head, None)
variants = {}
for k in (2, 4, 8):
    variants[k] = [torch.ops.mkldnn._reorder_linear_weight(c.contiguous(), None) for c in head.chunk(k)]
xs = {i: torch.randn(4, i).to(bf) for i in (512, 2048)}
def run_layers():
    for s, p in zip(shapes, layers): lp(xs[s[1]], p, None, "none", [], "")
res = {}
names = ["whole"] + [f"zig{k}" for k in variants] + [f"fwd{k}" for k in variants]
t = {n: [] for n in names}
for r in range(int(sys.argv[1]) if len(sys.argv) > 1 else 6):
    for n in (names if r % 2 == 0 else names[::-1]):
        ts = []
        for step in range(12):
            s0 = time.perf_counter()
            run_layers()
            if n == "whole":
                lp(xs[512], whole, None, "none", [], "")
            else:
                k = int(n[3:]); chunks = variants[k]
                order = chunks if (n.startswith("fwd") or step % 2 == 0) else chunks[::-1]
                for c in order: lp(xs[512], c, None, "none", [], "")
            ts.append(time.perf_counter() - s0)
        t[n].append(statistics.median(ts[2:]))
base = statistics.median(t["whole"])
for n in names: print(n, "paired", round(statistics.median([w / x for w, x in zip(t["whole"], t[n])]), 3))
print(" ".join(f"{n} {statistics.median(v)*1e3:.2f}ms ({base/statistics.median(v):.3f}x)" for n, v in t.items()))
