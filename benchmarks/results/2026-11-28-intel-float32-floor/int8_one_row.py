import torch, time, sys, warnings
warnings.simplefilter("ignore")
torch.set_num_threads(int(sys.argv[1]))
import os
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "2026-11-27-intel-session-reuse-mkl-packing"))
from probes import best_us  # noqa: E402
bench = lambda f, n=200: best_us(f, n)  # microseconds
for V,K in [(16000,256),(32000,512)]:
    w=torch.randn(V,K); q=torch.randint(-127,128,(V,K),dtype=torch.int8); qt=q.t(); qc=q.t().contiguous()
    x=torch.randint(-127,128,(1,K),dtype=torch.int8); xf=torch.randn(1,K)
    pk=torch.ops.quantized.linear_prepack(torch.quantize_per_tensor(w, 0.01, 0, torch.qint8), None)
    mk=torch.ops.mkl._mkl_reorder_linear_weight(w, 256)
    print(V,K, "int_mm(view) %.0f us"%bench(lambda: torch._int_mm(x, qt)), "int_mm(contig) %.0f"%bench(lambda: torch._int_mm(x, qc)),
      "fbgemm dyn %.0f"%bench(lambda: torch.ops.quantized.linear_dynamic(xf, pk, False)),
      "f32 linear %.0f"%bench(lambda: torch.nn.functional.linear(xf, w)),
      "f32 mv %.0f"%bench(lambda: torch.mv(w, xf[0])),
      "mkl packed %.0f"%bench(lambda: torch.ops.mkl._mkl_linear(xf, mk, w, None, 1)))
