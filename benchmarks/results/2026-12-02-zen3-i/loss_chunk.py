# The fused loss at the small-cpu recipe's step (about 684 target rows, d_model 256, vocab 16k), float32, 2 threads:
# chunk 512 (default) against one chunk, oneDNN logits against PyTorch's mm, taking turns.
import time, torch, statistics
from zhen.fast_training import LinearCrossEntropy
torch.set_num_threads(2)
n, d, V = 684, 256, 16000
h = torch.randn(n, d, requires_grad=True); w = (torch.randn(V, d) * 0.05).requires_grad_()
y = torch.randint(0, V, (n,))
def run(chunk, onednn):
    def f():
        loss = LinearCrossEntropy.apply(h, w, y, 0.1, chunk, onednn); loss.backward()
        h.grad = None; w.grad = None
    return f
cases = {f"chunk {c} {'onednn' if o else 'mm'}": run(c, o) for c in (512, 1024, 256) for o in (True, False)}
for f in cases.values(): f(); f()
T = {k: [] for k in cases}
for r in range(15):
    for k, f in (list(cases.items()) if r % 2 else list(reversed(cases.items()))):
        t = time.perf_counter(); f(); T[k].append(time.perf_counter() - t)
for k, v in T.items(): print(k, "median %.1f ms  min %.1f ms" % (1000 * statistics.median(v), 1000 * min(v)))
