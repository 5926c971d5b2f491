import os, statistics, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
from int8_batches import columns as cols, greedy_batches, quantized as q, tokenizer as tok
from zhen.fast_generation import FastDecoder
for direction in ("zh-en", "en-zh"):
    src, tgt = direction.split("-")
    ids = tok(cols[src])["input_ids"]
    batches = greedy_batches(direction)
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
