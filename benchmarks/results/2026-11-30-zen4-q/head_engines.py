import torch, time, warnings
warnings.simplefilter("ignore")
torch.set_num_threads(1)
from zhen import ZhenForConditionalGeneration
from zhen.quantization import quantize_dynamic, pack_for
from zhen import hardware
import copy
m = ZhenForConditionalGeneration.from_pretrained("/tmp/s36/small-cpu/model", dtype=torch.float32).eval()
q = quantize_dynamic(m)
head_on = q.lm_head
head_fb = pack_for(copy.deepcopy(q.lm_head), "fbgemm")
print(head_on.packed_for, head_fb.packed_for)
def bench(f, n=40):
    for _ in range(5): f()
    t = time.perf_counter()
    for _ in range(n): f()
    return (time.perf_counter() - t) / n * 1e6
for rows in (2, 8, 12, 16, 20, 24, 28):
    x = torch.randn(rows, 256)
    a = [];
    for r in range(3):
        a.append((bench(lambda: head_on(x)), bench(lambda: head_fb(x))))
    on, fb = min(v[0] for v in a), min(v[1] for v in a)
    print(f"rows {rows:3d}: onednn {on:7.0f} us  fbgemm {fb:7.0f} us  fbgemm/onednn speed {on/fb:.2f}")
