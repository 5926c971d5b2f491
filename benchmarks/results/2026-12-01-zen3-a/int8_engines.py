"""_int_mm against FBGEMM's packed product and float32's oneDNN product at the screen's shapes (one thread)."""
import time, torch
from zhen.screened_argmax import fbgemm_packed, fbgemm_sums, FBGEMM_LEVELS
torch.set_num_threads(1)
def best(f, n=5):
    f(); b = 1e9
    for _ in range(n):
        t = time.perf_counter(); f(); b = min(b, time.perf_counter() - t)
    return b * 1e3
for width, vocab in ((256, 16000), (512, 32000)):
    w = torch.randint(-127, 128, (vocab, width), dtype=torch.int8)
    wt = w.t()
    packed = fbgemm_packed(w, FBGEMM_LEVELS)
    wf = torch.randn(vocab, width)
    onednn = torch.ops.mkldnn._reorder_linear_weight(wf, None)
    for rows in (1, 8, 16, 64):
        q = torch.randint(-63, 64, (rows, width)).float()
        q8 = q.to(torch.int8)
        x = torch.randn(rows, width)
        a = best(lambda: torch._int_mm(q8, wt) if rows > 1 else torch._int_mm(q8[:1], wt))
        b = best(lambda: fbgemm_sums(q, packed, FBGEMM_LEVELS))
        c = best(lambda: torch.ops.mkldnn._linear_pointwise(x, onednn, None, "none", [], ""))
        print(f"width {width} vocab {vocab} rows {rows}: _int_mm {a:.2f} ms, FBGEMM {b:.2f} ms, float32 oneDNN {c:.2f} ms", flush=True)
