"""int8 greedy, pooled tails: batches of 64 against 96/128, taking turns in one process. Env: N, SPLIT, THREADS, STREAMS,
ROUNDS, SIZES. Run from the repository root: python benchmarks/results/2026-11-30-zen4-x/int8_bs.py en-zh"""
import os, sys, time, statistics, torch, warnings
warnings.simplefilter("ignore")
THREADS = int(os.environ.get("THREADS", "2")); STREAMS = int(os.environ.get("STREAMS", "2"))
torch.set_num_threads(THREADS)
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast
from zhen.data import load_parallel
from zhen.evaluation import parallel_columns
import zhen.fast_generation as fg
from zhen.quantization import quantize_dynamic
M = "/tmp/s36/small-cpu/model"
src, tgt = (sys.argv[1] if len(sys.argv) > 1 else "en-zh").split("-")
model = ZhenForConditionalGeneration.from_pretrained(M).eval(); tok = ZhenTokenizerFast.from_pretrained(M)
cols = parallel_columns(load_parallel(f"../shared/data/tatoeba/{os.environ.get('SPLIT','valid')}.jsonl.gz"), int(os.environ.get("N", "1000")))
tok.src_lang, tok.tgt_lang = src, tgt
ids = tok(cols[src])["input_ids"]
order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))
def make(bs):
    out = []
    for s in range(0, len(order), bs):
        rows = order[s:s+bs]; b = tok.pad({"input_ids": [ids[i] for i in rows]}, return_tensors="pt")
        out.append(dict(**b, forced_bos_token_id=tok.get_lang_id(tgt), num_beams=1, max_new_tokens=int(1.5*max(len(ids[i]) for i in rows))+10))
    return out
sizes = [int(x) for x in os.environ.get("SIZES", "64,128").split(",")]
batches = {bs: make(bs) for bs in sizes}
q = quantize_dynamic(model)
times = {bs: [] for bs in sizes}
with torch.inference_mode(), fg.FastDecoder(q, script_layers=True) as dec:
    for bs in sizes: list(dec.generate_batches(batches[bs], STREAMS))
    for r in range(int(os.environ.get("ROUNDS", "6"))):
        for bs in (sizes if r % 2 == 0 else sizes[::-1]):
            t = time.perf_counter(); list(dec.generate_batches(batches[bs], STREAMS)); times[bs].append(time.perf_counter() - t)
base = sizes[0]
print(f"{src}-{tgt} N={len(ids)} threads {THREADS} streams {STREAMS}: " + ", ".join(
    f"{bs}: {statistics.median(times[bs])*1e3:.0f} ms ({statistics.median(a/b for a, b in zip(times[base], times[bs])):.3f}x {base})" for bs in sizes), flush=True)
