"""The float32 session's packed encoder at base (random weights) on 64 synthetic sentences of the benchmark's length
mix (one batch of bench_generate's), 2 threads: ms a batch and the profiler's operations."""
import sys, warnings
import torch
sys.path.insert(0, "/work/main/benchmarks")
sys.path.insert(0, "/work/main/benchmarks/results/2026-11-27-intel-session-reuse-mkl-packing")
warnings.simplefilter("ignore")
from probes import best_us
from common import synthetic_pairs, pad, PAD
from zhen import ZhenForConditionalGeneration
from zhen.fast_generation import FastDecoder

torch.set_num_threads(2)
model = ZhenForConditionalGeneration.from_pretrained(sys.argv[1]).eval()
sources = sorted((s for s, _ in synthetic_pairs(256, model.config.vocab_size, 0)), key=len)[96:160]
ids = pad(sources, PAD, multiple=1)
mask = ids.ne(PAD).long()
print("batch", tuple(ids.shape), "real tokens", int(mask.sum()))
with torch.inference_mode(), FastDecoder(model) as dec:
    f = lambda: dec.encode(ids, mask)
    print("encode ms", round(best_us(f, 5) / 1000, 1))
    with torch.profiler.profile() as prof:
        for _ in range(5):
            f()
print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=15))
