import sys, time, statistics, torch
sys.path.insert(0, "benchmarks")
torch.set_num_threads(1)
from bleu_int8 import make_batches
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast
from zhen.data import load_parallel
from zhen.evaluation import parallel_columns
from zhen.fast_generation import FastDecoder
from zhen.quantization import quantize_dynamic
M = "/tmp/s36/small-cpu/model"
model = ZhenForConditionalGeneration.from_pretrained(M, dtype=torch.float32).eval()
tok = ZhenTokenizerFast.from_pretrained(M)
cols = parallel_columns(load_parallel("../shared/data/tatoeba/valid.jsonl.gz"), 1000)
q = quantize_dynamic(model)
mnt = lambda n: max(1, min(int(1.5 * n) + 10, 512))
for direction in ("zh-en", "en-zh"):
    src, tgt = direction.split("-")
    ids = tok(cols[src])["input_ids"]
    rows, batches = make_batches(tok, cols[src], src, tgt, 64, 1, mnt)
    res = {True: [], False: []}
    outs = {}
    with torch.inference_mode(), FastDecoder(q, weights="auto") as dec:
        for r in range(6):
            for flag in ((True, False) if r % 2 else (False, True)):
                dec.attends_by_row_sums = flag
                t = time.perf_counter(); o = list(dec.generate_batches(batches, 1)); res[flag].append(time.perf_counter() - t)
                outs[flag] = o
    same = all(torch.equal(a, b) for a, b in zip(outs[True], outs[False]))
    print(direction, "mean source tokens", round(sum(map(len, ids)) / len(ids), 1), {k: round(statistics.median(v) * 1000) for k, v in res.items()}, "same", same)
