"""log-softmax (in place) and the chunks' maxima over 16k-wide rows, by rows per call, one thread: ns an element."""
import sys
import torch
sys.path.insert(0, "/work/main/benchmarks/results/2026-11-27-intel-session-reuse-mkl-packing")
from probes import best_us
torch.set_num_threads(1)
with torch.inference_mode():
    for rows in (8, 16, 32, 64, 128, 256):
        x = torch.randn(rows, 16384)
        ls = best_us(lambda: torch.log_softmax(x, -1, out=x), max(5, 4000 // rows))
        am = best_us(lambda: x.view(rows, -1, 64).amax(-1), max(5, 4000 // rows))
        lse = best_us(lambda: torch.logsumexp(x, -1), max(5, 4000 // rows))
        mx = best_us(lambda: x.amax(-1), max(5, 4000 // rows))
        n = rows * 16384 / 1000
        print(f"rows {rows:4d} ({rows * 64} KB): log_softmax {ls / n:.3f} ns/elem, chunk amax {am / n:.3f}, logsumexp {lse / n:.3f}, row amax {mx / n:.3f}")
