"""bf16 session head at decoding shapes: packed bf16 logits + argmax vs the int8 screen (float32 ScreenedArgmax)."""
import sys
sys.path.insert(0, "/work/main/benchmarks/results/2026-11-27-intel-session-reuse-mkl-packing")
import torch
from probes import best_us
from zhen.fast_generation import Bf16Linear
from zhen.screened_argmax import ScreenedArgmax
torch.set_num_threads(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
torch.manual_seed(0)
head = torch.nn.Linear(512, 32000, bias=False)
bf = Bf16Linear(head)
screen = ScreenedArgmax(head)
for rows in (1, 4, 32, 64):
    h = torch.randn(rows, 512)
    # a trained-like hidden state: one token clearly ahead
    target = head.weight[torch.randint(0, 32000, (rows,))]
    h_peaked = h * 0.2 + target * 40
    full = best_us(lambda: bf(h).argmax(-1), 200 if rows < 32 else 50)
    s_flat = best_us(lambda: screen(h), 200 if rows < 32 else 50)
    s_peak = best_us(lambda: screen(h_peaked), 200 if rows < 32 else 50)
    print(f"rows {rows}: bf16 head+argmax {full:.0f} us, screen flat {s_flat:.0f} us ({screen(h) is not None}), screen peaked {s_peak:.0f} us")
