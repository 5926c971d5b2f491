"""zhen int8 with batches of many rows sent to oneDNN (amx_int8 on) against FBGEMM-only int8 (off), in one process:
the same 500 Tatoeba pairs translated in sessions of batches of 64 (as benchmarks/bleu_int8.py), the two taking
turns, each keeping its fastest round. Usage (repo root): int8_amx_ab.py CHECKPOINT BEAMS [ROUNDS]"""
import contextlib, math, os, sys, time, warnings
sys.path.insert(0, "benchmarks")
warnings.simplefilter("ignore")
import torch
from bleu_int8 import translate_ids
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast, hardware
from zhen.data import load_parallel
from zhen.evaluation import parallel_columns, score
from zhen.fast_generation import FastDecoder
from zhen.hardware import decoding_streams
from zhen.quantization import quantize_dynamic

torch.set_num_threads(2)
path, beams = sys.argv[1], int(sys.argv[2])
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
model = ZhenForConditionalGeneration.from_pretrained(path, dtype=torch.float32).eval()
tokenizer = ZhenTokenizerFast.from_pretrained(path)
columns = parallel_columns(load_parallel("../shared/data/tatoeba/valid.jsonl.gz"), 500)
streams = decoding_streams(torch.device("cpu"))
if os.environ.get("MANY_ROWS"):  # another threshold than the package's, for this run
    import zhen.quantization
    zhen.quantization.MANY_ROWS = int(os.environ["MANY_ROWS"])
systems = {}
for amx in ("on", "off"):
    with hardware.forced(amx_int8=amx):
        systems[amx] = quantize_dynamic(model)


@contextlib.contextmanager
def session(quantized):
    with FastDecoder(quantized) as decoder:
        yield lambda batches: list(decoder.map(lambda kwargs: decoder.generate(**kwargs), batches, streams))


import zhen.quantization
print(f"# MANY_ROWS {zhen.quantization.MANY_ROWS}, WIDE_WEIGHT {zhen.quantization.WIDE_WEIGHT}")
print(f"# {path}, beam {beams}, 500 pairs, batches of 64, {streams} streams, {hardware.current().describe()}")
for direction in ("en-zh", "zh-en"):
    src, tgt = direction.split("-")
    out, best = {}, {}
    for r in range(rounds):
        for amx in list(systems)[:: -1 if r % 2 else 1]:
            start = time.perf_counter()
            with torch.inference_mode(), session(systems[amx]) as run:
                out[amx] = translate_ids(run, tokenizer, columns[src], src, tgt, 64, beams,
                                         lambda n: min(int(1.5 * n) + 10, 512))
            best[amx] = min(best.get(amx, math.inf), time.perf_counter() - start)
    same = sum(a == b for a, b in zip(out["on"], out["off"])) / len(out["on"])
    bleu = {amx: score(out[amx], columns[tgt], tgt)["bleu"] for amx in out}
    print(f"{direction}: amx_int8 on {500 / best['on']:.1f} sent/s (BLEU {bleu['on']:.2f}), off {500 / best['off']:.1f}"
          f" sent/s (BLEU {bleu['off']:.2f}): on/off {best['off'] / best['on']:.2f}x, same output {same:.1%}")
