"""The tiny LM head's bf16 products (T x 256 @ 256 x 16000), 2 threads: row chunks and column blocks."""
import os, sys, time, torch
torch.set_num_threads(2)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bf16_shapes import rate  # (GFLOP/s, ms) of the best of three loops of n calls
V, D = 16000, 256
w = torch.randn(V, D).bfloat16(); wt = w.t().contiguous()
for M in (256, 512, 1024, 2048, 4096):
    x = torch.randn(M, D).bfloat16(); g = torch.randn(M, V).bfloat16()
    fl = 2 * M * D * V
    out = torch.empty(M, V, dtype=torch.bfloat16)
    res = {"fwd x@wt": rate(lambda: x @ wt, fl, 5)[0], "fwd x@w.T": rate(lambda: x @ w.t(), fl, 5)[0]}
    for nb in (1024, 2048, 4000):
        blocks = [wt[:, j:j + nb].contiguous() for j in range(0, V, nb)]
        def f():
            return torch.cat([x @ b for b in blocks], 1)
        res[f"fwd cols{nb}+cat"] = rate(f, fl, 5)[0]
        def f2():
            for i, b in enumerate(blocks):
                torch.mm(x, b, out=out[:, i * nb:(i + 1) * nb])
        try:
            res[f"fwd cols{nb} out="] = rate(f2, fl, 5)[0]
        except Exception as e:
            res[f"fwd cols{nb} out="] = str(e)[:40]
    res["dgrad g@w"] = rate(lambda: g @ w, fl, 5)[0]
    res["wgrad g.T@x"] = rate(lambda: g.t() @ x, fl, 5)[0]
    res["wgrad x.T@g"] = rate(lambda: x.t() @ g, fl, 5)[0]
    print(M, "  ".join(f"{k} {v:.0f}" if isinstance(v, float) else f"{k} {v}" for k, v in res.items()), flush=True)
