"""zhen.translate one text a call, the helper against the plain call, alternating per call; medians of paired ratios."""
import sys, time, torch, warnings, statistics
warnings.simplefilter("ignore")
sys.path.insert(0, "/work/main/benchmarks")
import common  # SCRIPT_AFTER_SECONDS = 0 (steady state)
from zhen import hardware
from zhen.data import load_parallel
from zhen.evaluation import parallel_columns
from zhen.translation import load_model_and_tokenizer, translate
path, src, tgt, beams, int8 = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5] == "int8"
model, tok = load_model_and_tokenizer(path, int8=int8)
texts = parallel_columns(load_parallel("/work/shared/data/tatoeba/valid.jsonl.gz"), 16)[src]
calls = {"zhen": hardware.packed_product, "plain": lambda op, *a: op(*a)}
for _ in range(40):  # past drafting's start
    translate([texts[0]], model, tok, src_lang=src, tgt_lang=tgt, num_beams=beams)
ratios, times = [], {k: [] for k in calls}
for r in range(3):
    for i, text in enumerate(texts):
        t = {}
        for name in (calls if (i + r) % 2 == 0 else list(reversed(list(calls)))):
            hardware.packed_product = calls[name]
            s = time.perf_counter()
            translate([text], model, tok, src_lang=src, tgt_lang=tgt, num_beams=beams)
            t[name] = time.perf_counter() - s
            times[name].append(t[name])
        ratios.append(t["plain"] / t["zhen"])
print(f"{path} {src}->{tgt} beams {beams} int8 {int8}: zhen {statistics.median(times['zhen'])*1e3:.1f} ms, plain {statistics.median(times['plain'])*1e3:.1f} ms a call; median paired plain/zhen {statistics.median(ratios):.3f}")
