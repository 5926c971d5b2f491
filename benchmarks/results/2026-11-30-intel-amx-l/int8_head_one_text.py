"""One text a call through zhen.translate with an int8 copy, its LM head FBGEMM's below HEAD_MANY_ROWS rows (today) or
oneDNN's at every row count (before), the two taking turns call by call in one process; median per-call times.
Usage (repo root): int8_head_one_text.py CHECKPOINT BEAMS [TEXTS] [ROUNDS]"""
import statistics, sys, time, warnings
warnings.simplefilter("ignore")
import torch
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast, translate
from zhen.data import load_parallel
from zhen.evaluation import parallel_columns
from zhen.quantization import HEAD_MANY_ROWS, pack_for, quantize_dynamic

torch.set_num_threads(2)
path, beams = sys.argv[1], int(sys.argv[2])
texts, rounds = (int(a) for a in (sys.argv[3:5] + ["16", "3"][len(sys.argv[3:5]):]))
model = ZhenForConditionalGeneration.from_pretrained(path, dtype=torch.float32).eval()
tokenizer = ZhenTokenizerFast.from_pretrained(path)
columns = parallel_columns(load_parallel("../shared/data/tatoeba/valid.jsonl.gz"), texts)
systems = {"today": quantize_dynamic(model), "before": quantize_dynamic(model)}
pack_for(systems["before"].lm_head, "onednn").many_rows_numel = sys.maxsize
for direction in ("en-zh", "zh-en"):
    src, tgt = direction.split("-")
    times = {name: [] for name in systems}
    outputs = {name: [] for name in systems}
    for r in range(rounds + 1):
        for text in columns[src]:
            for name in list(systems)[:: -1 if r % 2 else 1]:
                start = time.perf_counter()
                out = translate(text, systems[name], tokenizer, src_lang=src, tgt_lang=tgt, num_beams=beams)
                if r:  # the first round warms up
                    times[name].append(time.perf_counter() - start)
                    outputs[name].append(out)
    med = {name: statistics.median(t) * 1e3 for name, t in times.items()}
    same = sum(a == b for a, b in zip(outputs["today"], outputs["before"])) / len(outputs["today"])
    print(f"{direction} beam {beams}: head FBGEMM below {HEAD_MANY_ROWS} rows {med['today']:.2f} ms, oneDNN always "
          f"{med['before']:.2f} ms: {med['before'] / med['today']:.3f}x, same output {same:.0%}")
