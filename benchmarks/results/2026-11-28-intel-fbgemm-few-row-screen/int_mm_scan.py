"""`torch._int_mm` at the `small-cpu` screen's shape (hidden 256 -> vocabulary 16k) and base's (512 -> 32k), every row
count from 1 to 64, both ways round (hidden @ weight, as `ScreenedArgmax`; weight @ hidden^T), 2 threads: µs a call."""
import sys
import torch
sys.path.insert(0, "/work/main/benchmarks/results/2026-11-27-intel-session-reuse-mkl-packing")
from probes import best_us

torch.manual_seed(0)
torch.set_num_threads(int(sys.argv[1]) if len(sys.argv) > 1 else 2)
with torch.inference_mode():
    for width, vocab in ((256, 16384), (512, 32768)):
        w = torch.randint(-127, 128, (vocab, width), dtype=torch.int8)
        w_t = w.t()
        line = []
        for rows in range(1, 65):
            x = torch.randint(-127, 128, (rows, width), dtype=torch.int8)
            x_t = x.t().contiguous()
            a = best_us(lambda: torch._int_mm(x, w_t), 10, warmup=2)
            b = best_us(lambda: torch._int_mm(w, x_t), 10, warmup=2)
            line.append(f"{rows}:{a:.0f}/{b:.0f}")
        print(f"{width}->{vocab} rows:hidden@weight/weight@hidden^T µs:", " ".join(line))
