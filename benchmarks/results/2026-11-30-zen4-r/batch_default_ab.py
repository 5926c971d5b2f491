"""zhen.translate's default session (no precision flag), batches of 64 against 128 texts, taking turns (order reversed
every other round), on Tatoeba and news validation text, greedy and beam 4; two threads."""
import sys, time, warnings, statistics, torch
warnings.simplefilter("ignore")
import zhen
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast
from zhen.data import load_parallel
from zhen.evaluation import parallel_columns
M = sys.argv[1]; rounds = int(sys.argv[2])
model = ZhenForConditionalGeneration.from_pretrained(M, dtype=torch.float32).eval()
tok = ZhenTokenizerFast.from_pretrained(M)
for corpus, n, beams in (("tatoeba", 1000, 1), ("news", 500, 1), ("tatoeba", 1000, 4)):
    cols = parallel_columns(load_parallel(f"../shared/data/{corpus}/valid.jsonl.gz"), n)
    for direction in ("en-zh", "zh-en"):
        src, tgt = direction.split("-")
        texts = cols[src]
        zhen.translate(texts[:128], model, tok, src_lang=src, tgt_lang=tgt, num_beams=beams)
        res = {64: [], 128: []}; outs = {}
        for r in range(rounds):
            for bs in ((64, 128) if r % 2 == 0 else (128, 64)):
                t = time.perf_counter()
                outs[bs] = zhen.translate(texts, model, tok, src_lang=src, tgt_lang=tgt, batch_size=bs, num_beams=beams)
                res[bs].append(len(texts) / (time.perf_counter() - t))
        same = sum(a == b for a, b in zip(outs[64], outs[128])) / len(texts)
        ratios = [b / a for a, b in zip(res[64], res[128])]
        print(f"{corpus} beam {beams} {direction}: sent/s 64: median {statistics.median(res[64]):.0f} best {max(res[64]):.0f}; "
              f"128: median {statistics.median(res[128]):.0f} best {max(res[128]):.0f}; paired ratios "
              + " ".join(f"{x:.2f}" for x in ratios) + f" (median {statistics.median(ratios):.2f}); same translations {same:.1%}", flush=True)
