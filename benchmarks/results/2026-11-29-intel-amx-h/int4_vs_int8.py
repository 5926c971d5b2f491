import time, torch, warnings, sys
torch.set_num_threads(2); warnings.simplefilter("ignore"); torch.manual_seed(0)
sys.path.insert(0, "/tmp/s31")
shapes = []
for _ in range(6):
    shapes += [(512, 512)] * 6 + [(2048, 512), (512, 2048)]
shapes += [(32000, 512)]
ws = [torch.randn(o, i) * 0.05 for o, i in shapes]
def int4(w, group):
    o, i = w.shape
    g = w.reshape(o, i // group, group)
    lo, hi = g.amin(-1, keepdim=True), g.amax(-1, keepdim=True)
    scale = (hi - lo).clamp(min=1e-6) / 15
    q = ((g - lo) / scale).round().clamp(0, 15).to(torch.int32).reshape(o, i)
    zero = lo + scale * 8
    packed = torch.ops.aten._convert_weight_to_int4pack_for_cpu(q, 2)
    sz = torch.stack([scale.reshape(o, -1), zero.reshape(o, -1)], -1).transpose(0, 1).contiguous().bfloat16()
    return packed, sz, group
def int8(w):
    q = torch.ao.nn.quantized.dynamic.Linear(w.shape[1], w.shape[0], dtype=torch.qint8)
    wq = torch.quantize_per_channel(w, w.abs().amax(1) / 127, torch.zeros(w.shape[0], dtype=torch.long), 0, torch.qint8)
    q.set_weight_bias(wq, torch.zeros(w.shape[0]))
    return q._packed_params._packed_params
torch.backends.quantized.engine = "fbgemm"
v = {"int4g32": [int4(w, 32) for w in ws], "int4g128": [int4(w, 128) for w in ws], "int8": [int8(w) for w in ws],
     "bf16": [torch.ops.mkldnn._reorder_linear_weight(w.bfloat16(), None) for w in ws]}
def run(name, xs):
    if name.startswith("int4"):
        for (p, sz, g), (o, i) in zip(v[name], shapes):
            torch.ops.aten._weight_int4pack_mm_for_cpu(xs[i].bfloat16(), p, g, sz).float()
    elif name == "int8":
        for p, (o, i) in zip(v[name], shapes):
            torch.ops.quantized.linear_dynamic(xs[i], p, True)
    else:
        for p, (o, i) in zip(v[name], shapes):
            torch.ops.mkldnn._linear_pointwise(xs[i].bfloat16(), p, None, "none", [], "").float()
for rows in (1, 4, 8):
    xs = {d: torch.randn(rows, d) for d in (512, 2048)}
    t = {n: [] for n in v}
    for r in range(15):
        for n in v:
            s = time.perf_counter(); run(n, xs); t[n].append(time.perf_counter() - s)
    print(rows, "rows", {n: round(sorted(x)[7] * 1e3, 2) for n, x in t.items()})
