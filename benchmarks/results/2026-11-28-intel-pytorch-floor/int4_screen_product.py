import sys; sys.path.insert(0, "/work/main/benchmarks/results/2026-11-27-intel-session-reuse-mkl-packing")
import torch, time
torch.set_num_threads(2)
from probes import best_us
N, K = 32000, 512
w = torch.randn(N, K)
for g in (32, 64, 128):
    # asymmetric int4 per group, as torchao packs it
    wg = w.view(N, K // g, g)
    mn, mx = wg.amin(-1, keepdim=True), wg.amax(-1, keepdim=True)
    scale = ((mx - mn) / 15).clamp_min(1e-8); zero = mn + 8 * scale  # dequant: (q - 8) * scale + zero
    q = torch.round((wg - mn) / scale).clamp(0, 15).to(torch.int32).view(N, K)
    try:
        packed = torch._convert_weight_to_int4pack_for_cpu(q, 1)
        sz = torch.stack([scale.view(N, K // g).t(), zero.view(N, K // g).t()], -1).contiguous()
        x = torch.randn(1, K)
        y = torch._weight_int4pack_mm_for_cpu(x, packed, g, sz)
        deq = ((q.view(N, K // g, g) - 8) * scale + zero).view(N, K)
        print(g, 'err vs deq', float((y - x @ deq.t()).abs().max()), 'us', best_us(lambda: torch._weight_int4pack_mm_for_cpu(x, packed, g, sz), 200),
              'bf16 x us', best_us(lambda: torch._weight_int4pack_mm_for_cpu(x.bfloat16(), packed, g, sz.bfloat16()), 200))
    except Exception as e:
        print(g, 'fail', repr(e)[:300])
w8 = torch.randint(-127, 127, (K, N), dtype=torch.int8); x8 = torch.randint(-127,127,(1,K),dtype=torch.int8)
print('int_mm us', best_us(lambda: torch._int_mm(x8, w8), 200))
w8n = w8.t().contiguous(); s = torch.rand(N)
print('int8pack_mm us', best_us(lambda: torch._weight_int8pack_mm(torch.randn(1,K), w8n, s), 200))
w8t = w8.t().contiguous().t()  # the screen's layout: the (K, N) view of a contiguous (N, K) int8 weight
print('int_mm us, the screen\'s layout', best_us(lambda: torch._int_mm(x8, w8t), 200))
