import torch, time, sys
torch.set_num_threads(int(sys.argv[1]))
import os
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "2026-11-27-intel-session-reuse-mkl-packing"))
from probes import best_us  # noqa: E402
bench = lambda f, n=10: best_us(f, n) / 1e6  # seconds
V,K=32000,512
w=torch.randn(V,K)
q=torch.randint(-127,128,(V,K),dtype=torch.int8)
for M in [1,4,16,64,128,256]:
    x=torch.randint(-127,128,(M,K),dtype=torch.int8)
    xf=torch.randn(M,K)
    ops=2*M*K*V/1e9
    t1=bench(lambda: torch._int_mm(x, q.t()))
    qc=q.t().contiguous()
    t2=bench(lambda: torch._int_mm(x, qc))
    # fbgemm dynamic
    qw=torch.quantize_per_tensor(w, 0.01, 0, torch.qint8)
    pk=torch.ops.quantized.linear_prepack(qw, None)
    t3=bench(lambda: torch.ops.quantized.linear_dynamic(xf, pk, False))
    print(f"M{M}: _int_mm(t view) {ops/t1:.0f} GOP/s  _int_mm(contig KxV) {ops/t2:.0f}  fbgemm dyn {ops/t3:.0f}", flush=True)
