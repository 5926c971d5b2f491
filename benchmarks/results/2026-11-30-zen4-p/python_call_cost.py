import torch, time, warnings
warnings.simplefilter("ignore")
torch.set_num_threads(1)
def t(f, n=5000):
    for _ in range(100): f()
    s = time.perf_counter()
    for _ in range(n): f()
    return (time.perf_counter() - s) / n * 1e6
lin = torch.nn.Linear(64, 64)
q = torch.ao.quantization.quantize_dynamic(torch.nn.Sequential(lin), {torch.nn.Linear: torch.ao.quantization.per_channel_dynamic_qconfig}, dtype=torch.qint8)[0]
p = q._packed_params._packed_params
x = torch.randn(1, 64)
op = torch.ops.quantized.linear_dynamic
print("packet", t(lambda: op(x, p, True)))
print("packet kw", t(lambda: op(x, p, reduce_range=True)))
print("default", t(lambda: op.default(x, p, True)))
class M(torch.nn.Module):
    def __init__(s, p): super().__init__(); s.p = p
    def forward(s, x):
        y = x
        for _ in range(100):
            y = torch.ops.quantized.linear_dynamic(x, s.p, True)
        return y
m = torch.jit.script(M(p))
print("scripted (per call)", t(lambda: m(x), 200) / 100)
print(torch.ops.quantized.linear_dynamic.overloads())
class One(torch.nn.Module):
    def __init__(s, p): super().__init__(); s.p = p
    def forward(s, x):
        return torch.ops.quantized.linear_dynamic(x, s.p, True)
one = torch.jit.script(One(p))
print("scripted one", t(lambda: one(x)))
big = torch.nn.Linear(256, 16000)
qb = torch.ao.quantization.quantize_dynamic(torch.nn.Sequential(big), {torch.nn.Linear: torch.ao.quantization.per_channel_dynamic_qconfig}, dtype=torch.qint8)[0]
pb = qb._packed_params._packed_params
xb = torch.randn(1, 256)
oneb = torch.jit.script(One(pb))
print("lm head python kw", t(lambda: op(xb, pb, reduce_range=True), 2000), "scripted", t(lambda: oneb(xb), 2000))
print("lm head python kw", t(lambda: op(xb, pb, reduce_range=True), 2000), "scripted", t(lambda: oneb(xb), 2000))
xb = torch.randn(32, 256)
print("32 rows lm head python kw", t(lambda: op(xb, pb, reduce_range=True), 500), "scripted", t(lambda: oneb(xb), 500))
D = torch._C.DisableTorchFunctionSubclass
D2 = torch._C.DisableTorchFunction
def sub():
    with D(): return op(x, p, True)
def full():
    with D2(): return op(x, p, True)
print("subclass-disabled", t(sub), "all-disabled", t(full), "plain", t(lambda: op(x, p, True)))
d = D()
def entered():
    return op(x, p, True)
with D():
    print("inside one context", t(entered))
