exec(open("benchmarks/results/2026-12-02-zen3-h/enc_probe.py").read().split("gen = CTranslate2Generator")[0])
from concurrent.futures import ThreadPoolExecutor
gen = CTranslate2Generator(out, compute_type="int8", inter_threads=2, intra_threads=1)
src, tgt = sys.argv[1], sys.argv[2]
mnt = lambda n: max(1, min(int(1.5 * n) + 10, 511))
rows, batches = make_batches(tok, cols[src], src, tgt, 64, 1, mnt)
dec = FastDecoder(q, weights="auto").__enter__()
torch.inference_mode().__enter__()
pool = ThreadPoolExecutor(2, initializer=lambda: (torch.set_num_threads(1), torch.inference_mode().__enter__()))
def zhen_enc():
    list(pool.map(lambda b: dec.encode(b["input_ids"], b["attention_mask"]), batches))
def zhen_full():
    return list(dec.generate_batches(batches, 2))
def ct2(n):
    def f():
        [w() for w in [gen.generate(**({**b, "max_new_tokens": n} if n else b), asynchronous=True) for b in batches]]
    return f
fns = {"zhen_enc": zhen_enc, "ct2_1": ct2(1), "ct2_2": ct2(2), "zhen_full": zhen_full, "ct2_full": ct2(0)}
for f in fns.values(): f(); f()
res = {k: [] for k in fns}
for r in range(5):
    for k, f in (fns.items() if r % 2 else reversed(list(fns.items()))):
        t = time.perf_counter(); f(); res[k].append(time.perf_counter() - t)
for k, v in res.items(): print(k, "min %.3f s  median %.3f s" % (min(v), sorted(v)[2]))
