import torch, time, warnings, copy, sys
warnings.simplefilter("ignore")
torch.set_num_threads(1)
from zhen import ZhenForConditionalGeneration, hardware
from zhen.quantization import quantize_dynamic, pack_for
from zhen.fast_generation import argmax
m = ZhenForConditionalGeneration.from_pretrained("/tmp/s36/small-cpu/model", dtype=torch.float32).eval()
head = m.lm_head
W = head.weight.data
V, d = W.shape
def qlinear(w, engine):
    lin = torch.nn.Sequential(torch.nn.Linear(d, w.shape[0], bias=False)); lin[0].weight.data = w.clone()
    ql = torch.ao.quantization.quantize_dynamic(lin, {torch.nn.Linear}, dtype=torch.qint8)[0]  # per-tensor! use per-channel below
    return ql
from torch.ao.quantization import per_channel_dynamic_qconfig
def qlin_pc(w, engine):
    lin = torch.nn.Sequential(torch.nn.Linear(d, w.shape[0], bias=False)); lin[0].weight.data = w.clone()
    ql = torch.ao.quantization.quantize_dynamic(lin, {torch.nn.Linear: per_channel_dynamic_qconfig}, dtype=torch.qint8)[0]
    return pack_for(ql, engine)
chunk = int(sys.argv[1]) if len(sys.argv) > 1 else 2048
for engine in ("fbgemm", "onednn"):
    full = qlin_pc(W, engine)
    packed_full = full._packed_params._packed_params
    parts = [qlin_pc(W[i:i + chunk], engine)._packed_params._packed_params for i in range(0, V, chunk)]
    def plain(x):
        with torch._C.DisableTorchFunctionSubclass():
            logits = torch.ops.quantized.linear_dynamic(x, packed_full, False)
        return argmax(logits)
    def chunked(x):
        best_v, best_i = None, None
        with torch._C.DisableTorchFunctionSubclass():
            vals, idxs = [], []
            for j, p in enumerate(parts):
                v, i = torch.ops.quantized.linear_dynamic(x, p, False).max(-1)
                vals.append(v); idxs.append(i + j * chunk)
        vals = torch.stack(vals, 1); idxs = torch.stack(idxs, 1)
        c = vals.argmax(1)
        return idxs.gather(1, c[:, None])[:, 0]
    def bench(f, x, n=30):
        for _ in range(3): f(x)
        t = time.perf_counter()
        for _ in range(n): f(x)
        return (time.perf_counter() - t) / n * 1e6
    for rows in (8, 16, 32, 64, 128):
        x = torch.randn(rows, d) * 3
        same = torch.equal(plain(x), chunked(x))
        r = [(bench(plain, x), bench(chunked, x)) for _ in range(3)]
        a, b = min(v[0] for v in r), min(v[1] for v in r)
        print(f"{engine} chunk {chunk} rows {rows:3d}: full+argmax {a:6.0f} us, chunked {b:6.0f} us, speed {a/b:.2f}, same {same}")
