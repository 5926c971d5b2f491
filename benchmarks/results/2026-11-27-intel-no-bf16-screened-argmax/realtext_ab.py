"""zhen int8 (zhen.translate's session, 2 decoding streams) against CTranslate2 int8 (inter_threads=2) on real text,
interleaved rounds in one process; also each with one stream of one thread. Tiny model, 500 Tatoeba pairs, beam 4."""
import os, sys, tempfile, time, warnings
import torch
sys.path.insert(0, os.path.join(os.environ.get("ZHEN_TREE", "/work/main"), "benchmarks"))
warnings.simplefilter("ignore")
torch.set_num_threads(2)
from bleu_int8 import translate_ids
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast
from zhen.convert_ctranslate2 import CTranslate2Generator, convert
from zhen.data import load_parallel
from zhen.evaluation import parallel_columns
from zhen.fast_generation import FastDecoder
from zhen.quantization import quantize_dynamic

model_dir, test = sys.argv[1], sys.argv[2]
rounds = int(os.environ.get("ROUNDS", 4))
model = ZhenForConditionalGeneration.from_pretrained(model_dir, dtype=torch.float32).eval()
tok = ZhenTokenizerFast.from_pretrained(model_dir)
cols = parallel_columns(load_parallel(test), 500)
quantized = quantize_dynamic(model)
mnt = lambda n: max(1, min(int(1.5 * n) + 10, 512))
out = convert(model_dir, tempfile.mkdtemp() + "/int8", quantization="int8")
ct2 = {s: CTranslate2Generator(out, compute_type="int8", inter_threads=s, intra_threads=1) for s in (1, 2)}

def zhen(streams, batch):
    def run(src, tgt):
        with torch.inference_mode(), FastDecoder(quantized, weights="auto") as dec:
            return translate_ids(lambda b: list(dec.map(lambda kw: dec.generate(**kw), b, streams)), tok, cols[src], src, tgt, batch, 4, mnt)
    return run

def ctranslate2(streams, batch):
    gen = ct2[streams]
    return lambda src, tgt: translate_ids(lambda bs: [w() for w in [gen.generate(**b, asynchronous=True) for b in bs]], tok, cols[src], src, tgt, batch, 4, mnt)

systems = {"zhen int8 2 streams, 64": zhen(2, 64), "zhen int8 2 streams, 32": zhen(2, 32), "CT2 int8 inter 2, 64": ctranslate2(2, 64), "CT2 int8 inter 2, 32": ctranslate2(2, 32),
           "zhen int8 1 stream 1 thread, 64": zhen(1, 64), "CT2 int8 1 thread, 64": ctranslate2(1, 64)}
speeds = {}
for r in range(rounds):
    for src, tgt in (("en", "zh"), ("zh", "en")):
        for name, run in systems.items():
            if "1 thread" in name or "1 stream" in name:
                torch.set_num_threads(1)
            start = time.perf_counter(); run(src, tgt); s = 500 / (time.perf_counter() - start)
            torch.set_num_threads(2)
            speeds.setdefault((src, name), []).append(s)
for (src, name), v in speeds.items():
    print(f"{src}->{'zh' if src == 'en' else 'en'} | {name} | " + " / ".join(f"{x:.0f}" for x in v) + f" | median {sorted(v)[len(v)//2]:.0f}")
for src in ("en", "zh"):
    med = lambda n: sorted(speeds[src, n])[rounds // 2]
    best_ct2 = max(med("CT2 int8 inter 2, 64"), med("CT2 int8 inter 2, 32"))
    print(f"{src}: zhen 2 streams / CT2 best two workers {med('zhen int8 2 streams, 64') / best_ct2:.2f}x; "
          f"one thread {med('zhen int8 1 stream 1 thread, 64') / med('CT2 int8 1 thread, 64'):.2f}x")
