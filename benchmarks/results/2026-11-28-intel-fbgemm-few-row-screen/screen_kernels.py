"""int8 products at the greedy screen's base shape (hidden 512 -> vocabulary 32k), by rows, 2 and 1 threads:
`torch._int_mm` (int8 x int8 -> int32, what `ScreenedArgmax` calls) against the dynamic quantized linear
(`quantized::linear_dynamic`, uint8 activations, float output) packed for oneDNN and for FBGEMM; µs a call, GMAC/s."""
import sys
import torch
sys.path.insert(0, "/work/main/benchmarks/results/2026-11-27-intel-session-reuse-mkl-packing")
from probes import best_us
from zhen import hardware
from zhen.quantization import quantize_dynamic, pack_for

hardware.keep_freed_memory()
torch.manual_seed(0)
lin = torch.nn.Sequential(torch.nn.Linear(512, 32768, bias=False))
w8 = torch.randint(-127, 128, (32768, 512), dtype=torch.int8).t()
dn = pack_for(quantize_dynamic(lin)[0], "onednn")._packed_params._packed_params
fb = quantize_dynamic(lin)[0]._packed_params._packed_params
with torch.inference_mode():
    for threads in (2, 1):
        torch.set_num_threads(threads)
        for rows in (1, 4, 64):
            x8 = torch.randint(-127, 128, (rows, 512), dtype=torch.int8)
            x = torch.randn(rows, 512)
            n = max(3, 200 // rows)
            a = best_us(lambda: torch._int_mm(x8, w8), n)
            b = best_us(lambda: torch.ops.quantized.linear_dynamic(x, dn, reduce_range=True), n)
            c = best_us(lambda: torch.ops.quantized.linear_dynamic(x, fb, reduce_range=True), n)
            macs = rows * 512 * 32768 / 1e3
            print(f"{threads} thread(s) rows {rows:3d}: _int_mm {a:7.0f} µs ({macs / a:4.0f} GMAC/s), oneDNN dynamic {b:7.0f} ({macs / b:4.0f}), FBGEMM dynamic {c:7.0f} ({macs / c:4.0f})")
