"""At 1 and 4 rows, hot: a base decoder's product shapes as FBGEMM's dynamic int8 (what the draft multiplies by) and
as MKL's packed float32 (the model's own), in microseconds."""

import sys

import torch

sys.path.insert(0, "/work/main/benchmarks/results/2026-11-27-intel-session-reuse-mkl-packing")
from probes import best_us  # noqa: E402
from zhen import hardware  # noqa: E402
from zhen.quantization import quantize_parts  # noqa: E402

torch.set_num_threads(2)
torch.manual_seed(0)
for out_features, in_features, name in ((1536, 512, "self qkv"), (512, 512, "q / out"), (2048, 512, "fc1"),
                                        (512, 2048, "fc2"), (32768, 512, "head")):  # fmt: skip
    linear = torch.nn.Linear(in_features, out_features)
    int8 = quantize_parts(torch.nn.Sequential(linear), onednn_head=False)[0] if False else None
    holder = torch.nn.Sequential(torch.nn.Linear(in_features, out_features))
    holder[0].load_state_dict(linear.state_dict())
    int8 = quantize_parts(holder, ["0"], onednn_head=False)[0]
    packed = torch.ops.mkl._mkl_reorder_linear_weight(linear.weight.detach(), hardware.MKL_PACKED_ROWS)
    cells = []
    for rows in (1, 4):
        x = torch.randn(rows, in_features)
        with torch.inference_mode():
            q = best_us(lambda: int8(x), 200)
            f = best_us(lambda: torch.ops.mkl._mkl_linear(x, packed, linear.weight, linear.bias, rows), 200)
        cells.append(f"{rows} rows: int8 {q:.0f} / float32 {f:.0f}")
    print(f"{name} {out_features}x{in_features}: " + ", ".join(cells))
