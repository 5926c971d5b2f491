"""Exact int8 sums through FBGEMM's prepacked weight: the screen's int8 weight packed for FBGEMM (scale 1), hidden rows
already quantized to 7-bit integers passed as floats with scale 1 and zero point 64
(`quantized::linear_with_input_q_dq_qweight_dq_output_fp32`): equal to `torch._int_mm`'s int32 sums? µs by rows at
base's screen shape (512 -> 32k), 2 threads. FBGEMM_ENABLE_INSTRUCTIONS=AVX2 forces FBGEMM's AVX2 kernels."""
import os, sys
import torch
sys.path.insert(0, "/work/main/benchmarks/results/2026-11-27-intel-session-reuse-mkl-packing")
from probes import best_us

torch.manual_seed(0)
torch.set_num_threads(2)
width, vocab = (int(v) for v in os.environ.get("SHAPE", "512,32768").split(","))
w = torch.randint(-127, 128, (vocab, width), dtype=torch.int8)
qweight = torch._make_per_tensor_quantized_tensor(w, 1.0, 0)
packed = torch.ops.quantized.linear_prepack(qweight, None)
op = torch.ops.quantized.linear_with_input_q_dq_qweight_dq_output_fp32
print("FBGEMM_ENABLE_INSTRUCTIONS", os.environ.get("FBGEMM_ENABLE_INSTRUCTIONS"), "engine", torch.backends.quantized.engine)
with torch.inference_mode():
    ok = 0
    for t in range(40):
        rows = 1 + t % 40
        q = torch.randint(-63, 64, (rows, width), dtype=torch.int8)
        if t % 5 == 0:
            q[:] = 63 if t % 2 else -63  # extremes
        exact = torch._int_mm(q, w.t()) if rows > 0 else None
        got = op(q.float(), 1.0, 64, packed)
        ok += torch.equal(got, exact.float())
    print("equal to _int_mm:", ok, "of 40")
    for rows in (1, 2, 4, 8, 16, 32, 64):
        q = torch.randint(-63, 64, (rows, width), dtype=torch.int8)
        qf = q.float()
        a = best_us(lambda: torch._int_mm(q, w.t()), 10, warmup=2)
        b = best_us(lambda: op(qf, 1.0, 64, packed), 10, warmup=2)
        print(f"rows {rows:2d}: _int_mm {a:6.0f} µs, FBGEMM prepacked {b:6.0f} µs")
