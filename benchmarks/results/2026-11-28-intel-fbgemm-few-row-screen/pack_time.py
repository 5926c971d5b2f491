"""What packing the screen's int8 weight for FBGEMM costs once (at a session's first step of 2-8 rows), base's
32k x 512 and `small-cpu`'s 16k x 256, 2 threads; and the screen of 1-16 rows by each path, hot (µs)."""
import sys, time
import torch
sys.path.insert(0, "/work/main/benchmarks/results/2026-11-27-intel-session-reuse-mkl-packing")
from probes import best_us
import zhen.screened_argmax as sa

torch.set_num_threads(2)
sa.PACK_AFTER = 0  # FBGEMM from the first few-row screen
sa.FEW_ROWS_MIN_WEIGHT = 0  # at small-cpu width too
torch.manual_seed(0)
for vocab, width in ((32768, 512), (16384, 256)):
    linear = torch.nn.Linear(width, vocab)
    screen = sa.ScreenedArgmax(linear)
    start = time.perf_counter()
    packed = sa.fbgemm_packed(screen.int8_weight.t())
    print(f"{vocab}x{width}: packing {1000 * (time.perf_counter() - start):.1f} ms")
    screen.__dict__["fbgemm_weight"] = packed
    with torch.inference_mode():
        for rows in (2, 4, 8, 16):
            hidden = torch.nn.functional.layer_norm(torch.randn(rows, width), (width,)) * 3
            line = []
            for few in (0, 16):
                sa.FEW_ROWS = few
                line.append(best_us(lambda: screen.many_rows(hidden, None), 20))
            print(f"  rows {rows:2d}: screen with _int_mm {line[0]:.0f} µs, with FBGEMM's packed weight {line[1]:.0f} µs")
