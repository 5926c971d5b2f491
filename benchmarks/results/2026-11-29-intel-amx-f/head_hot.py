import time, torch, statistics, sys
torch.set_num_threads(2)
V, D = int(sys.argv[1]), int(sys.argv[2])
w = torch.randn(V, D) * 0.05
w16 = w.to(torch.bfloat16)
lp = torch.ops.mkldnn._linear_pointwise
pk = torch.ops.mkldnn._reorder_linear_weight(w16, None)
x = torch.randn(1, D); x16 = x.to(torch.bfloat16)
ref = lp(x16, pk, None, "none", [], "")
fns = {
 "onednn packed": lambda: lp(x16, pk, None, "none", [], ""),
 "F.linear bf16": lambda: torch.nn.functional.linear(x16, w16),
 "mv bf16": lambda: torch.mv(w16, x16[0]),
 "w@x.t bf16": lambda: w16 @ x16.t(),
 "mv fp32": lambda: torch.mv(w, x[0]),
 "linear fp32": lambda: torch.nn.functional.linear(x, w),
}
for k, f in fns.items():
    r = f().reshape(1, -1).float()
    print(k, "max diff vs packed", float((r - ref.float()).abs().max()), "argmax same", int(r.argmax()) == int(ref.float().argmax()))
for rows_label in ["hot"]:
    t = {k: [] for k in fns}
    for r in range(300):
        for k, f in fns.items():
            s = time.perf_counter(); f(); t[k].append(time.perf_counter() - s)
    print(V, D, {k: f"{statistics.median(v)*1e6:.0f}us" for k, v in t.items()})
