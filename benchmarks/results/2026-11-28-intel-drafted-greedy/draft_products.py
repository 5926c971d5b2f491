"""One-row products at base's decoder shapes, hot, 2 threads: the draft's dynamic int8 (FBGEMM's
`quantized::linear_dynamic`, per-channel), `torch._int_mm` with the input quantized and the output scaled by hand, and
the float32 session's MKL-packed product, in microseconds."""

import sys
import warnings

import torch

sys.path.insert(0, "/work/main/benchmarks/results/2026-11-27-intel-session-reuse-mkl-packing")
from probes import best_us  # noqa: E402

warnings.simplefilter("ignore")
torch.set_num_threads(2)
torch.manual_seed(0)
with torch.inference_mode():
    for inputs, outputs in ((512, 1536), (512, 512), (512, 2048), (2048, 512), (512, 32000)):
        x = torch.randn(1, inputs)
        linear = torch.nn.Linear(inputs, outputs)
        dynamic = torch.ao.quantization.quantize_dynamic(
            torch.nn.Sequential(linear), {torch.nn.Linear: torch.ao.quantization.per_channel_dynamic_qconfig}
        )[0]
        scales = linear.weight.abs().amax(1) / 127
        int8_t = torch.round(linear.weight / scales[:, None]).to(torch.int8).t().contiguous()
        bias = linear.bias.detach()

        def int_mm():
            step = x.abs().amax() / 127
            q = torch.round(x / step).to(torch.int8)
            return torch._int_mm(q, int8_t) * (scales * step) + bias

        packed = torch.ops.mkl._mkl_reorder_linear_weight(linear.weight.detach(), 256)
        w = linear.weight.detach()
        times = {
            "fbgemm dynamic": best_us(lambda: dynamic(x), 200),
            "_int_mm by hand": best_us(int_mm, 200) if outputs % 8 == 0 else float("nan"),
            "float32 mkl packed": best_us(lambda: torch.ops.mkl._mkl_linear(x, packed, w, bias, 1), 200),
        }
        print(f"{inputs}x{outputs}: " + ", ".join(f"{k} {v:.1f}" for k, v in times.items()))
