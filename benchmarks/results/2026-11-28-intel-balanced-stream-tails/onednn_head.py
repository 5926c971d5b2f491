"""The int8 LM head packed for oneDNN (what `quantize_dynamic` does on a CPU with VNNI): `linear_dynamic` by rows per
call; whether the explicit-quantization op takes oneDNN's packing; the rows' results independent of the batch?"""
import sys
import torch
sys.path.insert(0, "/work/main/benchmarks/results/2026-11-27-intel-session-reuse-mkl-packing")
from probes import best_us
from zhen import hardware
from zhen.quantization import quantize_dynamic, pack_for

hardware.keep_freed_memory()
print(hardware.current())
torch.manual_seed(0)
q = quantize_dynamic(torch.nn.Sequential(torch.nn.Linear(256, 16384)))[0]
pack_for(q, "onednn")
packed = q._packed_params._packed_params
rr = q.version is not None and q.version >= 4
x = torch.randn(256, 256)
with torch.inference_mode():
    try:
        s, z = torch._choose_qparams_per_tensor(x, rr)
        torch.ops.quantized.linear_with_input_q_dq_qweight_dq_output_fp32(x, s, z, packed)
        print("q_dq op takes oneDNN's packing")
    except Exception as e:
        print("q_dq op:", str(e).splitlines()[0][:200])
    full = torch.ops.quantized.linear_dynamic(x, packed, reduce_range=rr)
    part = torch.ops.quantized.linear_dynamic(x[:64], packed, reduce_range=rr)
    print("rows 0-63 alone equal to in the batch:", torch.equal(full[:64], part), (full[:64] - part).abs().max().item())
    for threads in (1, 2):
        torch.set_num_threads(threads)
        for rows in (16, 64, 128, 256):
            xr = x[:rows].clone()
            us = best_us(lambda: torch.ops.quantized.linear_dynamic(xr, packed, reduce_range=rr), max(5, 2000 // rows))
            print(f"threads {threads} rows {rows:4d}: {us:8.0f} µs, {us / rows:6.1f} µs a row")
