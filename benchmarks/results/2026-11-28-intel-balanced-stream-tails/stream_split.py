"""Where a beam-4 int8 decode of 500 Tatoeba sentences (tiny `small-cpu` checkpoint, 64 a batch) spends its time, one
stream of one thread against two streams: seconds summed over the streams' threads in each part."""
import sys, time, warnings
import torch
sys.path.insert(0, "/work/main/benchmarks")
sys.path.insert(0, "/work/main/benchmarks/results/2026-11-27-intel-session-reuse-mkl-packing")
warnings.simplefilter("ignore")
from probes import time_methods, timed
from bleu_int8 import translate_ids
import zhen.fast_generation as fg
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast
from zhen.data import load_parallel
from zhen.evaluation import parallel_columns
from zhen.quantization import quantize_dynamic

model_dir, test = sys.argv[1], sys.argv[2]
model = ZhenForConditionalGeneration.from_pretrained(model_dir, dtype=torch.float32).eval()
tok = ZhenTokenizerFast.from_pretrained(model_dir)
cols = parallel_columns(load_parallel(test), 500)
quantized = quantize_dynamic(model)
mnt = lambda n: max(1, min(int(1.5 * n) + 10, 512))
totals = {}
time_methods(totals, fg.DecoderSteps, ["step", "logits", "reorder", "keep", "expand"])
time_methods(totals, fg.FastDecoder, ["encode", "generate"])
fg.top_continuations = timed(totals, "top_continuations", fg.top_continuations)
torch.log_softmax = timed(totals, "log_softmax", torch.log_softmax)

def run(streams, threads):
    torch.set_num_threads(threads)
    with torch.inference_mode(), fg.FastDecoder(quantized, weights="auto") as dec:
        return translate_ids(lambda b: list(dec.map(lambda kw: dec.generate(**kw), b, streams)), tok, cols["en"], "en", "zh", 64, 4, mnt)

run(2, 2)
for _ in range(2):
    for streams, threads in ((1, 1), (2, 2)):
        totals.clear()
        start = time.perf_counter(); run(streams, threads); wall = time.perf_counter() - start
        parts = {k: round(v, 3) for k, v in totals.items()}
        rest = totals["generate"] - totals["encode"] - totals["step"] - totals["logits"] - totals["top_continuations"] - totals["log_softmax"] - totals.get("reorder", 0) - totals.get("keep", 0) - totals.get("expand", 0)
        print(f"{streams} stream(s): wall {wall:.3f} s; summed over threads {parts}; beam bookkeeping {rest:.3f}")
