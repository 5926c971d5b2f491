"""FBGEMM's against oneDNN's dynamic int8 product by rows at the encoder's and decoder's weight shapes (one thread)."""
import torch, time, warnings
warnings.simplefilter("ignore")
torch.set_num_threads(1)
from zhen.quantization import packing_for_engine
def run(f, n=50):
    for _ in range(5): f()
    t = time.perf_counter()
    for _ in range(n): f()
    return (time.perf_counter() - t) / n * 1e6
for M in (64, 256, 650, 2000):
    line = [f"M={M}"]
    for K, N in ((256, 768), (256, 256), (256, 1024), (1024, 256)):
        w = torch.randn(N, K)
        qw = torch.quantize_per_channel(w, w.abs().amax(1) / 127, torch.zeros(N, dtype=torch.long), 0, torch.qint8)
        b = torch.randn(N)
        x = torch.randn(M, K)
        packs = {}
        for eng in ("fbgemm", "onednn"):
            with packing_for_engine(eng):
                packs[eng] = torch.ops.quantized.linear_prepack(qw, b)
        tf = run(lambda: torch.ops.quantized.linear_dynamic(x, packs["fbgemm"], False))
        to = run(lambda: torch.ops.quantized.linear_dynamic(x, packs["onednn"], False))
        line.append(f"{K}x{N}: fbgemm {tf:.0f} onednn {to:.0f} us ({M*K*N/tf/1e3:.0f}/{M*K*N/to/1e3:.0f} GMAC/s)")
    print(" | ".join(line))
