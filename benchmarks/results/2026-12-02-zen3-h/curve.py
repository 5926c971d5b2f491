exec(open("benchmarks/results/2026-12-02-zen3-h/perstep.py").read().split("tok.src_lang")[0])
src, tgt = "en", "zh"
mnt = lambda n: max(1, min(int(1.5 * n) + 10, 511))
rows, batches = make_batches(tok, cols[src], src, tgt, 64, 1, mnt)
dec = FastDecoder(q, weights="auto").__enter__()
torch.inference_mode().__enter__()
b = {k: v for k, v in batches[8].items() if k != "max_new_tokens"}
print("source", b["input_ids"].shape)
def ct2(n):
    t = time.perf_counter(); gen.generate(**b, max_new_tokens=n, min_new_tokens=n); return time.perf_counter() - t
def zh(n):
    t = time.perf_counter(); dec.generate(**b, max_new_tokens=n, min_new_tokens=n); return time.perf_counter() - t
for f in (ct2, zh, ct2, zh):
    for n in (1, 2, 3, 5, 9): f(n)
    print(f.__name__, " ".join("%d:%.1f" % (n, 1e3 * min(f(n) for _ in range(7))) for n in (1, 2, 3, 5, 9)))
ct2f = lambda: gen.generate(**batches[8]); zhf = lambda: dec.generate(**batches[8])
for f in (ct2f, zhf, ct2f, zhf):
    f(); b2 = 1e9
    for _ in range(7):
        t = time.perf_counter(); f(); b2 = min(b2, time.perf_counter() - t)
    print("full %.1f ms" % (1e3 * b2))
