import time, torch, sys
torch.set_num_threads(2)
torch.manual_seed(0)
V, D, N, C = 32000, 512, 4096, int(sys.argv[1]) if len(sys.argv) > 1 else 512
w = torch.randn(V, D) * 0.05; x_all = torch.randn(N, D); y_all = torch.randint(0, V, (N,))
gw = torch.empty(V, D); gi = torch.empty(N, D)
buf = torch.empty(C, V); bufT = torch.empty(V, C)
def plain():
    loss = 0.0
    for s in range(0, N, C):
        x, y = x_all[s:s+C], y_all[s:s+C]
        logits = torch.mm(x, w.t(), out=buf[:len(x)])
        t = logits.gather(1, y[:, None])
        lp = torch.log_softmax(logits, 1, out=logits)
        nll = -lp.gather(1, y[:, None])
        p = lp.exp_()
        torch.mm(p, w, out=gi[s:s+C])
        gw.addmm_(p.t(), x, beta=1 if s else 0)
        loss += nll.sum() + t.sum()
    return loss
def transposed():
    loss = 0.0
    for s in range(0, N, C):
        x, y = x_all[s:s+C], y_all[s:s+C]
        lt = torch.mm(w, x.t(), out=bufT[:, :len(x)] if len(x) == C else torch.empty(V, len(x)))
        t = lt.gather(0, y[None])
        lp = torch.log_softmax(lt, 0, out=lt)
        nll = -lp.gather(0, y[None])
        p = lp.exp_()
        torch.mm(p.t(), w, out=gi[s:s+C])
        gw.addmm_(p, x, beta=1 if s else 0)
        loss += nll.sum() + t.sum()
    return loss
a = plain(); ga = gw.clone(); gia = gi.clone(); b = transposed()
print("equal:", torch.allclose(a, b, rtol=1e-5), (gw - ga).abs().max().item(), (gi - gia).abs().max().item())
ta, tb = [], []
for r in range(6):
    t = time.perf_counter(); plain(); ta.append(time.perf_counter() - t)
    t = time.perf_counter(); transposed(); tb.append(time.perf_counter() - t)
print("plain", [f"{v:.3f}" for v in ta]); print("trans", [f"{v:.3f}" for v in tb])
print(f"best plain {min(ta):.3f} trans {min(tb):.3f} ratio {min(ta)/min(tb):.3f}")
