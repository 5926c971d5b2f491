"""The int8 copy's LM head: FBGEMM for few rows + oneDNN for many (new) against oneDNN for all (old), taking turns."""
import sys, time, copy, statistics, warnings, torch
warnings.simplefilter("ignore")
import zhen
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast
from zhen.data import load_parallel
from zhen.evaluation import parallel_columns
from zhen.quantization import quantize_dynamic
path, tok_path, what = sys.argv[1], sys.argv[2], sys.argv[3]
model = ZhenForConditionalGeneration.from_pretrained(path, dtype=torch.float32).eval()
tok = ZhenTokenizerFast.from_pretrained(tok_path)
new = quantize_dynamic(model)
old = copy.deepcopy(new); old.lm_head.many_rows_numel = 0  # every row through oneDNN's packing, as before
print("new head:", type(new.lm_head).__name__, new.lm_head.many_rows_numel // new.lm_head.in_features, "rows on")
cols = parallel_columns(load_parallel("../shared/data/tatoeba/valid.jsonl.gz"), 1000)
systems = {"old (oneDNN head)": old, f"new (FBGEMM < {new.lm_head.many_rows_numel // new.lm_head.in_features} rows)": new}
if what == "one":
    torch.set_num_threads(1)
    texts = cols["en"][:16]
    for beams in (1, 4):
        times = {k: [] for k in systems}
        for m in systems.values():
            for t in texts[:4]: zhen.translate(t, model=m, tokenizer=tok, tgt_lang="zh", num_beams=beams)
        outs = {}
        for r in range(3):
            for k in (list(systems) if r % 2 == 0 else list(systems)[::-1]):
                for i, t in enumerate(texts):
                    s = time.perf_counter(); o = zhen.translate(t, model=systems[k], tokenizer=tok, tgt_lang="zh", num_beams=beams)
                    times[k].append(time.perf_counter() - s); outs[k, i] = o
        same = sum(outs[list(systems)[0], i] == outs[list(systems)[1], i] for i in range(len(texts)))
        med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
        a, b = med.values()
        print(f"one text a call, beam {beams}, 1 thread: " + ", ".join(f"{k} {v:.2f} ms" for k, v in med.items()) + f"; new/old speed {a/b:.3f}; same outputs {same}/{len(texts)}")
else:
    for src, tgt in (("en", "zh"), ("zh", "en")):
        texts = cols[src]
        best = {k: 1e9 for k in systems}
        outs = {}
        for r in range(3):
            for k in (list(systems) if r % 2 == 0 else list(systems)[::-1]):
                s = time.perf_counter(); outs[k] = zhen.translate(texts, model=systems[k], tokenizer=tok, src_lang=src, tgt_lang=tgt, num_beams=int(what), batch_size=int(sys.argv[4]) if len(sys.argv) > 4 else 64)
                best[k] = min(best[k], time.perf_counter() - s)
        a, b = best.values()
        same = sum(x == y for x, y in zip(*outs.values()))
        print(f"{src}->{tgt} 1000 texts, beam {what}, batches of {sys.argv[4] if len(sys.argv) > 4 else 64}, {torch.get_num_threads()} threads: " + ", ".join(f"{k} {len(texts)/v:.0f} sent/s" for k, v in best.items()) + f"; new/old speed {a/b:.3f}; same {same}/1000")
