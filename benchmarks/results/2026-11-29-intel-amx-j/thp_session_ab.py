import gzip, json, os, statistics, sys, time, torch
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from huge_pages import collapse, huge_kb, regions
torch.set_num_threads(2)
import zhen
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer
path = sys.argv[1]; beams = int(sys.argv[2])
tok = AutoTokenizer.from_pretrained(path)
pairs = [json.loads(l) for l in gzip.open("/work/shared/data/tatoeba/valid.jsonl.gz", "rt")][:32]
texts = [(p["en"], "en", "zh") for p in pairs] + [(p["zh"], "zh", "en") for p in pairs]
def run(model, t, s, d):
    return zhen.translate(t, model=model, tokenizer=tok, src_lang=s, tgt_lang=d, num_beams=beams)
models = {}
for name in ("plain", "huge"):
    before = regions()
    m = AutoModelForSeq2SeqLM.from_pretrained(path).eval()
    for t, s, d in texts[:40]:
        run(m, t, s, d)
    if name == "huge":
        print("collapsed", collapse(regions() - before), "huge pages; AnonHugeKB", huge_kb(), flush=True)
    models[name] = m
times = {"plain": [], "huge": []}; ratios = []
for rnd in range(int(sys.argv[3])):
    for i, (t, s, d) in enumerate(texts):
        order = ("plain", "huge") if (i + rnd) % 2 == 0 else ("huge", "plain")
        got = {}
        for name in order:
            a = time.perf_counter(); out = run(models[name], t, s, d); got[name] = time.perf_counter() - a
            times[name].append(got[name])
        ratios.append(got["plain"] / got["huge"])
print("beams", beams, "plain %.2f ms huge %.2f ms, paired median plain/huge %.3f, AnonHugeKB %d" % (
    1e3*statistics.median(times["plain"]), 1e3*statistics.median(times["huge"]), statistics.median(ratios), huge_kb()))
