"""A base decoder step's 43 oneDNN-packed bf16 products, 4 rows, two sets of weights taking turns; one set's memory
collapsed into huge pages. Usage: thp_products.py MODE: `first` (the collapsed set made first), `huge` (made second),
`none` (made second, nothing collapsed: the control)."""
import os, statistics, sys, time
import torch
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from huge_pages import collapse, huge_kb, regions
torch.set_num_threads(2)
shapes = [(1536, 512), (512, 512), (512, 512), (1024, 512), (512, 512), (2048, 512), (512, 2048)] * 6 + [(32000, 512)]
def make():
    return [torch.ops.mkldnn._reorder_linear_weight(torch.randn(s).to(torch.bfloat16), None) for s in shapes]
mode = sys.argv[1]
B = make() if mode != "first" else None
before = regions()
A = make()
print(mode, "collapsed huge pages", collapse(regions() - before) if mode != "none" else 0, "AnonHugeKB", huge_kb())
B = B or make()
x = torch.randn(4, 512).to(torch.bfloat16); x2 = torch.randn(4, 2048).to(torch.bfloat16)
def step(ws):
    for w in ws:
        torch.ops.mkldnn._linear_pointwise(x2 if w.shape[1] == 2048 else x, w, None, "none", [], "")
ta, tb = [], []
for r in range(60):
    for ws, acc in ((A, ta), (B, tb)) if r % 2 == 0 else ((B, tb), (A, ta)):
        t = time.perf_counter(); step(ws); acc.append(time.perf_counter() - t)
ta, tb = ta[6:], tb[6:]
print("huge %.2f ms  plain %.2f ms  plain/huge %.3f" % (1e3*statistics.median(ta), 1e3*statistics.median(tb), statistics.median(tb)/statistics.median(ta)))
