import os, sys, time, torch, warnings, statistics
warnings.simplefilter("ignore")
import zhen
from zhen.data import load_parallel
from zhen.evaluation import parallel_columns
M = os.environ.get("MODEL", "/tmp/s36/small-cpu/model")
model, tok = zhen.translation.load_model_and_tokenizer(M, int8=os.environ.get("INT8") == "1")
cols = parallel_columns(load_parallel(f"../shared/data/{os.environ.get('CORPUS', 'tatoeba')}/valid.jsonl.gz"), int(os.environ.get("N", "1000")))
beams = int(os.environ.get("BEAMS", "1"))
sizes = [int(x) for x in os.environ.get("SIZES", "64,128,256").split(",")]
res = {s: [] for s in sizes}
zhen.translate(cols["en"][:200], model, tok, tgt_lang="zh", num_beams=beams)
for r in range(int(os.environ.get("ROUNDS", "3"))):
    for s in (sizes if r % 2 == 0 else sizes[::-1]):
        t0 = time.perf_counter(); zhen.translate(cols["en"], model, tok, tgt_lang="zh", num_beams=beams, batch_size=s); res[s].append(time.perf_counter() - t0)
for s, v in res.items(): print(s, [round(1e3*x) for x in v])
print(f"threads {torch.get_num_threads()} beams {beams} int8 {os.environ.get('INT8')}: " + "  ".join(f"batch {s}: {1e3*statistics.median(v):.0f} ms" for s, v in res.items()))
