"""ReLU of an encoder FFN's hidden states at base (1593 tokens x 2048), 2 threads: out of place (`nn.ReLU`, what
`ZhenMLP` runs) against in place (`relu_`), freed memory kept as a decoding session keeps it."""
import sys
import torch
sys.path.insert(0, "/work/main/benchmarks/results/2026-11-27-intel-session-reuse-mkl-packing")
from probes import best_us
from zhen import hardware
hardware.keep_freed_memory()
torch.set_num_threads(2)
x = torch.randn(1593, 2048)
with torch.inference_mode():
    for _ in range(2):
        print("relu", round(best_us(lambda: torch.relu(x), 50)), "µs; relu_", round(best_us(lambda: x.relu_(), 50)), "µs")
