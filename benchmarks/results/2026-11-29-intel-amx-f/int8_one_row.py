import statistics, time, torch, warnings
warnings.simplefilter("ignore")
from zhen.screened_argmax import fbgemm_packed, fbgemm_sums
torch.set_num_threads(2)
for V, D in ((16000, 256), (32000, 512)):
    q = torch.randint(-127, 127, (V, D), dtype=torch.int8)
    packed = fbgemm_packed(q); qt = q.t()
    for rows in (1, 2, 4):
        x = torch.randint(-63, 63, (rows, D)).float()
        x8 = x.to(torch.int8)
        assert torch.equal(torch._int_mm(x8, qt).float(), fbgemm_sums(x, packed))
        f = {"int_mm": lambda: torch._int_mm(x8, qt), "fbgemm": lambda: fbgemm_sums(x, packed)}
        t = {k: [] for k in f}
        for r in range(200):
            for k in f:
                s = time.perf_counter(); f[k](); t[k].append(time.perf_counter() - s)
        print(V, D, rows, {k: f"{statistics.median(v)*1e6:.0f}us" for k, v in t.items()})
