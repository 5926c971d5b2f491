"""`zhen.translate` (a `small-cpu` checkpoint, 2 threads: 2 decoding streams) on the first `SENTENCES` (500) Tatoeba
validation sentences each way, its batches cut as at HEAD (64 to the end) and as the prototype cuts them
(`smaller_last_batches_prototype.patch`, `zhen.hardware.stream_batches`: the texts of the last two batches in four),
alternated in one process; float32 greedy and beam 4, int8 beam 4, and CTranslate2 int8 (two batches at once) on its
fixed batches of 64 and 32 and on the prototype's. Sentences/s (median of ROUNDS, 3) and a hash of the translations.
Needs the patch applied (`git apply`):

    SENTENCES=500 ROUNDS=3 python balanced_tails.py runs/zhen/model ../shared/data/tatoeba/valid.jsonl.gz
"""
import hashlib, os, sys, tempfile, time, warnings
import torch
sys.path.insert(0, os.path.join(os.environ.get("ZHEN_TREE", "/work/main"), "benchmarks"))
warnings.simplefilter("ignore")
torch.set_num_threads(2)
from bleu_int8 import translate_ids
import zhen
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast, hardware
from zhen.convert_ctranslate2 import CTranslate2Generator, convert
from zhen.data import load_parallel
from zhen.evaluation import parallel_columns
from zhen.quantization import quantize_dynamic

model_dir, test = sys.argv[1], sys.argv[2]
rounds = int(os.environ.get("ROUNDS", 3))
model = ZhenForConditionalGeneration.from_pretrained(model_dir, dtype=torch.float32).eval()
tok = ZhenTokenizerFast.from_pretrained(model_dir)
cols = parallel_columns(load_parallel(test), int(os.environ.get("SENTENCES", 500)))
quantized = quantize_dynamic(model)
balanced = hardware.stream_batches
plain = lambda items, batch_size, streams: [items[i : i + batch_size] for i in range(0, len(items), batch_size)]
ct2 = CTranslate2Generator(convert(model_dir, tempfile.mkdtemp() + "/int8", quantization="int8"), compute_type="int8",
                           inter_threads=2, intra_threads=1)
mnt = lambda n: max(1, min(int(1.5 * n) + 10, 512))


def zhen_system(m, beams, cut):
    def run(src, tgt):
        hardware.stream_batches = cut
        try:
            return zhen.translate(cols[src], m, tok, src_lang=src, tgt_lang=tgt, num_beams=beams)
        finally:
            hardware.stream_batches = balanced
    return run


def ct2_system(batch, streams):
    submit = lambda bs: [w() for w in [ct2.generate(**b, asynchronous=True) for b in bs]]
    return lambda src, tgt: translate_ids(submit, tok, cols[src], src, tgt, batch, 4, mnt, streams)


systems = {
    "zhen float32 greedy, 64 to the end": zhen_system(model, 1, plain),
    "zhen float32 greedy, last batches split": zhen_system(model, 1, balanced),
    "zhen float32 beam 4, 64 to the end": zhen_system(model, 4, plain),
    "zhen float32 beam 4, last batches split": zhen_system(model, 4, balanced),
    "zhen int8 beam 4, 64 to the end": zhen_system(quantized, 4, plain),
    "zhen int8 beam 4, last batches split": zhen_system(quantized, 4, balanced),
    "CT2 int8 beam 4, 64": ct2_system(64, 1),
    "CT2 int8 beam 4, 32": ct2_system(32, 1),
    "CT2 int8 beam 4, zhen's batches": ct2_system(64, 2),
}
speeds, hashes = {}, {}
for r in range(rounds + 1):  # the first round warms up
    for src, tgt in (("en", "zh"), ("zh", "en")):
        for name, run in systems.items():
            start = time.perf_counter()
            out = run(src, tgt)
            speed = len(out) / (time.perf_counter() - start)
            if r:
                speeds.setdefault((src, name), []).append(round(speed))
                hashes.setdefault((src, name), set()).add(hashlib.md5("\n".join(out).encode()).hexdigest()[:8])
print(hardware.current(), torch.__version__)
for (src, name), v in speeds.items():
    print(f"{src}->{'zh' if src == 'en' else 'en'} | {name} | {' / '.join(map(str, v))} | median {sorted(v)[len(v) // 2]} | {','.join(sorted(hashes[src, name]))}")
med = lambda src, name: sorted(speeds[src, name])[rounds // 2]
for src in ("en", "zh"):
    for kind in ("float32 greedy", "float32 beam 4", "int8 beam 4"):
        print(f"{src}: zhen {kind}: split / 64 to the end {med(src, f'zhen {kind}, last batches split') / med(src, f'zhen {kind}, 64 to the end'):.3f}x")
    best_fixed = max(med(src, "CT2 int8 beam 4, 64"), med(src, "CT2 int8 beam 4, 32"))
    print(f"{src}: zhen int8 (split) / CT2 best fixed batches {med(src, 'zhen int8 beam 4, last batches split') / best_fixed:.3f}x; "
          f"/ CT2 on zhen's batches {med(src, 'zhen int8 beam 4, last batches split') / med(src, 'CT2 int8 beam 4, zhen' + chr(39) + 's batches'):.3f}x; "
          f"before (64 to the end) / CT2 best fixed {med(src, 'zhen int8 beam 4, 64 to the end') / best_fixed:.3f}x")
