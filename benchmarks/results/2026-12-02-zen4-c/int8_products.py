"""int8 (and bf16) products of an LM head, one thread, taking turns: FBGEMM's exact sums (the bf16 session's screen),
`torch._int_mm`, oneDNN's static u8 x s8 product, bf16 through oneDNN, and dynamic int8 linears (FBGEMM, oneDNN).
Usage: python int8_products.py ROWS THREADS WIDTH VOCAB   (64 1 512 32000: base; 64 1 256 16000: small-cpu)"""
import time, torch, warnings, sys, statistics
warnings.simplefilter("ignore")
import zhen.hardware as hw
torch.set_num_threads(int(sys.argv[2]))
rows, width, vocab = int(sys.argv[1]), int(sys.argv[3]), int(sys.argv[4])
g = torch.Generator().manual_seed(0)
W = torch.randn(vocab, width, generator=g) * 0.05
h = torch.randn(rows, width, generator=g)
scale = float(W.abs().max()) / 127
W8 = torch.round(W / scale).clamp(-127, 127).to(torch.int8)
q = torch.round(h / (h.abs().amax(-1, keepdim=True) / 127))
torch.backends.quantized.engine = "fbgemm"
wq = torch._make_per_tensor_quantized_tensor(W8.contiguous(), 1.0, 0)
pk = torch.ops.quantized.linear_prepack(wq, None)
op = torch.ops.quantized.linear_with_input_q_dq_qweight_dq_output_fp32
q8 = q.to(torch.int8); W8t = W8.t()
wpk = torch.ops.onednn.qlinear_prepack(W8, (rows, width))
wsc = torch.ones(vocab); wzp = torch.zeros(vocab, dtype=torch.int64)
def static(out=torch.float32):
    u8 = (q + 128).to(torch.uint8)
    return torch.ops.onednn.qlinear_pointwise(u8, 1.0, 128, wpk, wsc, wzp, None, 1.0, 0, out, "none", [], "")
Wb = torch.ops.mkldnn._reorder_linear_weight(W.bfloat16(), None); hb = h.bfloat16()
fs = {"fbgemm": lambda: hw.packed_product(op, q, 1.0, 128, pk), "int_mm": lambda: torch._int_mm(q8, W8t),
      "onednn_static": static, "bf16": lambda: torch.ops.mkldnn._linear_pointwise(hb, Wb, None, "none", [], "")}
try:
    o = static(torch.int32); print("int32 out ok", o.dtype)
except Exception as e: print("int32 out fails", repr(e)[:200])
t = {k: [] for k in fs}
for k in fs: fs[k](); fs[k]()
for i in range(60):
    for k in fs:
        s = time.perf_counter(); fs[k](); t[k].append(time.perf_counter() - s)
for k in t: print(rows, k, "min %.2f med %.2f ms" % (min(t[k]) * 1e3, statistics.median(t[k]) * 1e3))
# dynamic linear, per-channel weights, both engines
from torch.ao.nn.quantized.dynamic import Linear as DL
lin = torch.nn.Linear(width, vocab); lin.weight.data = W.clone()
for eng in ("fbgemm", "onednn"):
    torch.backends.quantized.engine = eng
    qw = torch.quantize_per_channel(W, (W.abs().amax(1) / 127), torch.zeros(vocab, dtype=torch.int64), 0, torch.qint8)
    pk = torch.ops.quantized.linear_prepack(qw, lin.bias.detach())
    f = lambda: hw.packed_product(torch.ops.quantized.linear_dynamic, h, pk, False)
    for _ in range(3): f()
    ts = []
    for _ in range(60):
        s = time.perf_counter(); f(); ts.append(time.perf_counter() - s)
    print(rows, "dynamic", eng, "min %.2f med %.2f ms" % (min(ts) * 1e3, statistics.median(ts) * 1e3))
