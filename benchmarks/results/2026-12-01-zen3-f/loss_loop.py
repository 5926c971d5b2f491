import time, torch, statistics, sys
torch.set_num_threads(2)
lp = torch.ops.mkldnn._linear_pointwise
V, D, N = int(sys.argv[1]), int(sys.argv[2]), 4000
torch.manual_seed(0)
w = torch.randn(V, D) * 0.05; inputs = torch.randn(N, D); targets = torch.randint(0, V, (N,))
def loop(chunk, onednn):
    grad_inputs = torch.empty_like(inputs); grad_weight = torch.empty(V, D)
    buffer = inputs.new_empty((min(chunk, N), V)); loss = torch.zeros(())
    for start in range(0, N, chunk):
        x, y = inputs[start:start+chunk], targets[start:start+chunk]
        grad_rows = grad_inputs[start:start+chunk]
        if onednn:
            logits = lp(x, w, None, "none", [], "")
        else:
            logits = torch.mm(x, w.t(), out=buffer[:len(x)])
        tl = logits.gather(1, y[:, None]).squeeze(1)
        lps = torch.log_softmax(logits, 1, out=logits)
        nll = -lps.gather(1, y[:, None]).squeeze(1)
        probs = lps.exp_()
        torch.mm(probs, w, out=grad_rows)
        grad_weight.addmm_(probs.t(), x, beta=1 if start else 0)
        loss += nll.sum() + 0.1 * tl.sum()
    return loss, grad_inputs, grad_weight
ref = loop(512, False)
variants = [(512, False), (512, True), (256, False), (256, True), (384, True)]
for v in variants:
    out = loop(*v); assert all(torch.allclose(a, b, rtol=1e-4, atol=1e-4) for a, b in zip(ref, out)), v
times = {v: [] for v in variants}
for r in range(8):
    for v in (variants if r % 2 else variants[::-1]):
        s = time.perf_counter(); loop(*v); times[v].append(time.perf_counter() - s)
base = times[variants[0]]
for v in variants:
    print(v, f"best {min(times[v]):.3f} median {statistics.median(times[v]):.3f}  paired median ratio to (512, mkl) {statistics.median([b / t for b, t in zip(base, times[v])]):.3f}", flush=True)
