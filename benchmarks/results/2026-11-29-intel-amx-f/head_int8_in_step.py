import statistics, time, torch, sys, warnings
warnings.simplefilter("ignore")
from zhen.screened_argmax import fbgemm_packed, fbgemm_sums, ScreenedArgmax
from zhen.fast_generation import argmax
torch.set_num_threads(2)
bf = torch.bfloat16
lp = torch.ops.mkldnn._linear_pointwise
V, D, F, layers = 16000, 256, 1024, 3
shapes = []
for l in range(layers):
    shapes += [(3 * D, D), (D, D), (D, D), (D, D), (F, D), (D, F)]
lw = [torch.randn(o, i) * 0.05 for o, i in shapes]
w = torch.randn(V, D) * 0.05
pk = torch.ops.mkldnn._reorder_linear_weight(w.to(bf), None)
scr = ScreenedArgmax(torch.nn.Linear(D, V, bias=False).requires_grad_(False))
scr.weight = w
q = torch.round(w / (w.abs().max() / 127)).to(torch.int8)
packed = fbgemm_packed(q)
xs = {i: torch.randn(1, i) for i in (D, F)}
x = xs[D]
xq = torch.round(x / x.abs().max() * 63)
heads = {"bf16+argmax": lambda: argmax(lp(x.to(bf), pk, None, "none", [], "").float()),
         "fbgemm sums": lambda: fbgemm_sums(xq, packed),
         "int_mm": lambda: torch._int_mm(xq.to(torch.int8), q.t())}
t = {k: [] for k in heads}
for r in range(100):
    for k in (list(heads) if r % 2 else list(heads)[::-1]):
        for s, p in zip(shapes, lw): torch.nn.functional.linear(xs[s[1]], p)
        s1 = time.perf_counter(); heads[k](); t[k].append(time.perf_counter() - s1)
print({k: f"{statistics.median(v)*1e6:.0f}us" for k, v in t.items()})
