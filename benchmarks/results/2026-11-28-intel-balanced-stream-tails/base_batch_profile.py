"""zhen's float32 session at base (random weights) on one of bench_generate's batches (64 synthetic sentences, greedy,
32 new tokens forced), 2 threads, one stream: ms a batch and its encoder's, and the profiler's operations over 3
batches and over 5 encodings."""
import sys, warnings
import torch
sys.path.insert(0, "/work/main/benchmarks")
sys.path.insert(0, "/work/main/benchmarks/results/2026-11-27-intel-session-reuse-mkl-packing")
warnings.simplefilter("ignore")
from probes import best_us
from common import synthetic_pairs, pad, PAD, ZH
from zhen import ZhenForConditionalGeneration
from zhen.fast_generation import FastDecoder

torch.set_num_threads(2)
model = ZhenForConditionalGeneration.from_pretrained(sys.argv[1]).eval()
sources = sorted((s for s, _ in synthetic_pairs(256, model.config.vocab_size, 0)), key=len)[96:160]
ids = pad(sources, PAD, multiple=1)
mask = ids.ne(PAD).long()
beams = int(sys.argv[2]) if len(sys.argv) > 2 else 1
with torch.inference_mode(), FastDecoder(model) as dec:
    f = lambda: dec.generate(ids, mask, forced_bos_token_id=ZH, num_beams=beams, max_new_tokens=32, min_new_tokens=32)
    f()
    enc = lambda: dec.encode(ids, mask)
    print("batch ms", round(best_us(f, 2, warmup=1) / 1000, 1), "of which encode ms", round(best_us(enc, 2, warmup=1) / 1000, 1))
    for name, work, times in (("batches", f, 3), ("encodings", enc, 5)):
        with torch.profiler.profile() as prof:
            for _ in range(times):
                work()
        print(f"## {times} {name}")
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=20))
