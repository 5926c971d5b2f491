exec(open("benchmarks/results/2026-12-02-zen3-h/lens.py").read().split("L = lambda")[0])
dec.__exit__(None, None, None)
import zhen.session_modules as sm
L = lambda o: (o[:, 1:] != tok.pad_token_id).sum(1)
def texts(outs): return [t for o in outs for t in tok.batch_decode(o, skip_special_tokens=True)]
with FastDecoder(model, weights="auto") as d32:
    ref = texts([d32.generate(**b) for b in batches])
orig_f, orig_r = sm.Int8Linear.forward, sm.Int8Linear.relu
op = torch.ops.quantized.linear_dynamic
BIAS = {}
def per_row(self, x, relu=False):
    m = x.abs().amax(-1, keepdim=True).clamp_min(1e-30)
    b = BIAS.get(id(self), 0)
    if b is 0: b = BIAS[id(self)] = self.linear.bias()
    y = op(x / m, self.packed, self.reduce_range)
    y = (y - b).mul_(m).add_(b) if b is not None else y.mul_(m)
    return y.relu_() if relu else y
for name in ("per_tensor", "per_row") * 3:
    sm.Int8Linear.forward = orig_f if name == "per_tensor" else (lambda self, x: per_row(self, x))
    sm.Int8Linear.relu = orig_r if name == "per_tensor" else (lambda self, x: per_row(self, x, True))
    with FastDecoder(q, weights="auto", inline_layers=False) as dq:
        t = time.perf_counter(); outs = [dq.generate(**b) for b in batches]; dt = time.perf_counter() - t
    hyp = texts(outs)
    same = sum(a == b for a, b in zip(hyp, ref)) / len(ref)
    print(name, "same as float32 %.1f%%  tokens %d  max lens %s  %.2f s" % (100 * same, sum(int(L(o).sum()) for o in outs), [int(L(o).max()) for o in outs][:3], dt))
