"""Whether fbgemm's int8 product with the input's quantization given (`linear_with_input_q_dq_qweight_dq_output_fp32`)
reproduces `linear_dynamic` bit for bit when the dynamic parameters are chosen once for all rows and the rows go in
blocks; and its time by block size (d_model 256 -> vocab 16k, 1 and 2 threads)."""
import sys
import torch
sys.path.insert(0, "/work/main/benchmarks/results/2026-11-27-intel-session-reuse-mkl-packing")
from probes import best_us
from zhen import hardware
from zhen.quantization import quantize_dynamic

hardware.keep_freed_memory()
torch.manual_seed(0)
q = quantize_dynamic(torch.nn.Sequential(torch.nn.Linear(256, 16384)))[0]
packed = q._packed_params._packed_params
reduce_range = q.version is not None and q.version >= 4
print("reduce_range", reduce_range)
op = torch.ops.quantized.linear_with_input_q_dq_qweight_dq_output_fp32

def blocked(x, rows):
    scale, zero = torch._choose_qparams_per_tensor(x, reduce_range)
    return torch.cat([op(x[i:i + rows], scale, zero, packed) for i in range(0, len(x), rows)])

with torch.inference_mode():
    same = 0
    for t in range(50):
        x = torch.randn(256, 256) * (0.1 + t)
        if t % 3 == 0:
            x = x.relu()
        ref = torch.ops.quantized.linear_dynamic(x, packed, reduce_range=reduce_range)
        same += all(torch.equal(ref, blocked(x, r)) for r in (256, 64))
    print("bit-identical", same, "of 50")
    for threads in (1, 2):
        torch.set_num_threads(threads)
        x = torch.randn(256, 256)
        print(threads, "thread(s): linear_dynamic", round(best_us(lambda: torch.ops.quantized.linear_dynamic(x, packed, reduce_range=reduce_range), 30)),
              *[f"blocks of {r}: {best_us(lambda: blocked(x, r), 30):.0f}" for r in (256, 128, 64, 32)])
