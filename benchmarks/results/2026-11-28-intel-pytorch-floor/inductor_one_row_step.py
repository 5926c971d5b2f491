# Exploratory: what would inductor make of a one-row decoder step at small-cpu width (d256, 3 layers, 4 heads, ffn 1024)?
import torch, time, torch.nn.functional as F
import sys
sys.path.insert(0, "/work/main/benchmarks/results/2026-11-27-intel-session-reuse-mkl-packing")
from probes import best_us
torch.set_num_threads(2); torch.manual_seed(0)
D, H, L, FF, T, S = 256, 4, 3, 1024, 64, 12
hd = D // H
def lin(o, i): return (torch.randn(o, i) * 0.05, torch.randn(o) * 0.01)
W = [dict(qkv=lin(3*D, D), o=lin(D, D), q=lin(D, D), eo=lin(D, D), f1=lin(FF, D), f2=lin(D, FF),
          n1=(torch.ones(D), torch.zeros(D)), n2=(torch.ones(D), torch.zeros(D)), n3=(torch.ones(D), torch.zeros(D))) for _ in range(L)]
fn = (torch.ones(D), torch.zeros(D))
K = [torch.zeros(1, H, T, hd) for _ in range(L)]; V = [torch.zeros(1, H, T, hd) for _ in range(L)]
SK = [torch.randn(1, H, S, hd) for _ in range(L)]; SV = [torch.randn(1, H, S, hd) for _ in range(L)]
def step(x, pos, K, V, SK, SV):
    # x (1, D); pos: 0-dim int64 tensor
    mask = torch.arange(T) > pos  # (T,)
    for l in range(L):
        w = W[l]
        h = F.layer_norm(x, (D,), *w['n1'])
        q, k, v = F.linear(h, *w['qkv']).view(1, 3, H, hd).unbind(1)
        K[l].index_copy_(2, pos.view(1), k.view(1, H, 1, hd)); V[l].index_copy_(2, pos.view(1), v.view(1, H, 1, hd))
        s = (q.view(1, H, 1, hd) @ K[l].transpose(-1, -2)) * hd**-0.5
        s = s.masked_fill(mask, float('-inf')).softmax(-1)
        x = x + F.linear((s @ V[l]).reshape(1, D), *w['o'])
        h = F.layer_norm(x, (D,), *w['n2'])
        q = F.linear(h, *w['q']).view(1, H, 1, hd)
        s = ((q @ SK[l].transpose(-1, -2)) * hd**-0.5).softmax(-1)
        x = x + F.linear((s @ SV[l]).reshape(1, D), *w['eo'])
        h = F.layer_norm(x, (D,), *w['n3'])
        x = x + F.linear(F.linear(h, *w['f1']).relu(), *w['f2'])
    return F.layer_norm(x, (D,), *fn)
x = torch.randn(1, D); pos = torch.tensor(5)
with torch.no_grad():
    e = best_us(lambda: step(x, pos, K, V, SK, SV), 200)
    print('eager %.0f us' % e)
    t0 = time.time()
    c = torch.compile(step, dynamic=False, fullgraph=True)
    c(x, pos, K, V, SK, SV)
    print('compile %.1f s' % (time.time() - t0))
    print('compiled %.0f us' % best_us(lambda: c(x, pos, K, V, SK, SV), 200))
    import torch._inductor.config as cfg
    cfg.cpp_wrapper = True
    torch._dynamo.reset()
    t0 = time.time()
    c2 = torch.compile(step, dynamic=False, fullgraph=True)
    c2(x, pos, K, V, SK, SV)
    print('compile cpp_wrapper %.1f s' % (time.time() - t0))
    print('compiled cpp_wrapper %.0f us' % best_us(lambda: c2(x, pos, K, V, SK, SV), 200))
    print((c2(x, pos, K, V, SK, SV) - step(x, pos, K, V, SK, SV)).abs().max())
