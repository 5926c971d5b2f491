"""zhen's int8 scheme without VNNI against PyTorch's 7-bit activations by 8-bit weights (a scale per row), taking
turns in one process: sentences/s of whole runs (two streams, pooled tails, as zhen.translate), output tokens.

    python benchmarks/results/2026-12-02-zen3-h/schemes_speed.py MODEL DATA en zh
"""
import copy, statistics, sys, time, warnings
warnings.simplefilter("ignore")
sys.path.insert(0, "benchmarks")
import torch
torch.set_num_threads(2)
from bleu_int8 import make_batches
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast
from zhen.data import load_parallel
from zhen.evaluation import parallel_columns
from zhen.fast_generation import FastDecoder
from zhen.hardware import decoding_streams
from zhen.quantization import quantize_dynamic
from torch.ao.quantization import per_channel_dynamic_qconfig

model = ZhenForConditionalGeneration.from_pretrained(sys.argv[1], dtype=torch.float32).eval()
tok = ZhenTokenizerFast.from_pretrained(sys.argv[1])
cols = parallel_columns(load_parallel(sys.argv[2]), 1000)
src, tgt = sys.argv[3], sys.argv[4]
rows, batches = make_batches(tok, cols[src], src, tgt, 64, 1, lambda n: max(1, min(int(1.5 * n) + 10, 511)))
streams = decoding_streams(torch.device("cpu"))
systems = {
    "zhen": quantize_dynamic(model),
    "pytorch a7/w8": torch.ao.quantization.quantize_dynamic(
        copy.deepcopy(model), {torch.nn.Linear: per_channel_dynamic_qconfig}, torch.qint8),
}
sessions = {name: FastDecoder(q).__enter__() for name, q in systems.items()}
times = {name: [] for name in systems}
tokens = {}
with torch.inference_mode():
    for turn in range(8):
        for name in (list(systems) if turn % 2 else list(systems)[::-1]):
            start = time.perf_counter()
            outs = list(sessions[name].generate_batches(batches, streams))
            times[name].append(time.perf_counter() - start)
            tokens[name] = sum(int((o[:, 1:] != tok.pad_token_id).sum()) for o in outs)
for name, t in times.items():
    print(f"{src}-{tgt} {name:14s} sent/s median {1000 / statistics.median(t[2:]):.1f}  best {1000 / min(t[2:]):.1f}  "
          f"tokens {tokens[name]}")
ratios = [b / a for a, b in zip(times["zhen"][2:], times["pytorch a7/w8"][2:])]
print("zhen / pytorch per turn", " ".join(f"{r:.3f}" for r in ratios), "median", f"{statistics.median(ratios):.3f}")
