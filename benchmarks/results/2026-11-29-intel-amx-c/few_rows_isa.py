"""The bf16 session's 4-row products (oneDNN packed weights, as OnednnProduct) timed in one process; run under
different ONEDNN_MAX_CPU_ISA values, alternating processes."""
import os, statistics, sys, time
import torch
torch.set_num_threads(2)
torch.manual_seed(0)
bf = torch.bfloat16
shapes = [(512, 1536), (512, 512), (512, 2048), (2048, 512), (512, 32000)]
ws = []
for i, o in shapes:
    w = torch.randn(o, i, dtype=bf)
    packed = torch.ops.mkldnn._reorder_linear_weight(w, None) if hasattr(torch.ops.mkldnn, "_reorder_linear_weight") else w
    ws.append((torch.randn(4, i, dtype=bf), packed, torch.randn(o, dtype=bf)))
def step():
    for x, w, b in ws:
        torch.ops.mkldnn._linear_pointwise(x, w, b, "none", [], "")
for _ in range(20): step()
ts = []
for _ in range(300):
    s = time.perf_counter(); step(); ts.append(time.perf_counter() - s)
print(os.environ.get("ONEDNN_MAX_CPU_ISA", "default"), f"{statistics.median(ts)*1e6:.0f} us a set of 5 products")
