import ctypes, gzip, json, statistics, sys, time, torch
torch.set_num_threads(2)
import zhen
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer
libc = ctypes.CDLL("libc.so.6", use_errno=True)
def regions():
    out = set()
    for line in open('/proc/self/maps'):
        f = line.split()
        if len(f) == 5 or (len(f) == 6 and f[5].startswith('[heap')):
            a, b = (int(x, 16) for x in f[0].split('-'))
            if b - a >= 2**21: out.add((a, b))
    return out
def collapse(regs):
    n = 0
    for a, b in regs:
        s = (a + 2**21 - 1) & ~(2**21 - 1); e = b & ~(2**21 - 1)
        if e > s:
            libc.madvise(ctypes.c_void_p(s), ctypes.c_size_t(e - s), 14)
            n += ((e - s) >> 21) if libc.madvise(ctypes.c_void_p(s), ctypes.c_size_t(e - s), 25) == 0 else 0
    return n
def huge_kb():
    return int([l for l in open('/proc/self/smaps_rollup') if 'AnonHuge' in l][0].split()[1])
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
