# FBGEMM int8 product of the screen (rows x 512 x 32000, 7-bit activations as on AVX2) against float32, one thread.
import torch, time, sys
sys.path.insert(0, "/work/main")
from zhen.screened_argmax import fbgemm_packed, fbgemm_sums
torch.set_num_threads(1)
def best(f, n=10):
    f(); b = 1e9
    for _ in range(n):
        t = time.perf_counter(); f(); b = min(b, time.perf_counter() - t)
    return b
for V in (32000,):
    w8 = torch.randint(-127, 128, (V, 512), dtype=torch.int8)
    p = fbgemm_packed(w8)
    for M in (8, 16, 32, 64, 128, 256):
        q = torch.randint(-63, 64, (M, 512)).float()
        t = best(lambda: fbgemm_sums(q, p))
        wf = torch.randn(V, 512); x = torch.randn(M, 512)
        tf = best(lambda: x @ wf.t())
        print(f"M={M}: fbgemm {t*1e3:6.2f} ms = {2*M*V*512/t/1e9:6.1f} GOPS; float32 {tf*1e3:6.2f} ms; ratio {tf/t:.2f}")
