"""The bf16 session's products of one beam-4 decoder step, base-sized (6 layers: qkv, self out, cross q, cross out,
fc1 (ReLU fused), fc2; then the LM head), every weight distinct as in the model, 4 rows, in a loop: the products'
share of a step, caches as cold as the real step leaves them."""
import statistics, time, torch
torch.set_num_threads(2)
bf = torch.bfloat16
def packed(o, i):
    return torch.ops.mkldnn._reorder_linear_weight(torch.randn(o, i, dtype=bf) * 0.02, None), torch.zeros(o, dtype=bf)
layers = [[packed(1536, 512), packed(512, 512), packed(512, 512), packed(512, 512), packed(2048, 512), packed(512, 2048)] for _ in range(6)]
head = packed(32000, 512)
x512 = torch.randn(4, 512, dtype=bf); x2048 = torch.randn(4, 2048, dtype=bf)
lp = torch.ops.mkldnn._linear_pointwise
def step(with_head=True):
    for qkv, so, q, co, f1, f2 in layers:
        lp(x512, qkv[0], qkv[1], "none", [], ""); lp(x512, so[0], so[1], "none", [], "")
        lp(x512, q[0], q[1], "none", [], ""); lp(x512, co[0], co[1], "none", [], "")
        lp(x512, f1[0], f1[1], "relu", [], ""); lp(x2048, f2[0], f2[1], "none", [], "")
    if with_head:
        lp(x512, head[0], None, "none", [], "")
for _ in range(20): step()
for label, f in (("layers + head", lambda: step(True)), ("layers only", lambda: step(False))):
    ts = []
    for _ in range(200):
        s = time.perf_counter(); f(); ts.append(time.perf_counter() - s)
    print(f"{label}: {statistics.median(ts)*1e3:.2f} ms a step (median of 200)")

# the LM head alone, in the cycle (the layers' products between its calls), by layout
w = torch.randn(32000, 512, dtype=bf) * 0.02
w_t = w.t().contiguous()
x4 = torch.randn(4, 512, dtype=bf)
x4t = x4.t().contiguous()
heads = {
    "packed oneDNN (now)": lambda: lp(x4, head[0], None, "none", [], ""),
    "F.linear(x, w)": lambda: torch.nn.functional.linear(x4, w),
    "x @ w_t": lambda: x4 @ w_t,
    "w @ x.t() then .t().contiguous()": lambda: (w @ x4t).t().contiguous(),
    "w @ x.t()": lambda: w @ x4t,
}
times = {k: [] for k in heads}
for r in range(100):
    for k, f in heads.items():
        step(False)
        s = time.perf_counter(); f(); times[k].append(time.perf_counter() - s)
for k, ts in times.items():
    print(f"LM head {k:34s} {statistics.median(ts)*1e3:.2f} ms")
