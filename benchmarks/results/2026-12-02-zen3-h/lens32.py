exec(open("benchmarks/results/2026-12-02-zen3-h/lens.py").read().split("L = lambda")[0])
dec.__exit__(None, None, None)
L = lambda o: (o[:, 1:] != tok.pad_token_id).sum(1)
d32 = FastDecoder(model, weights="auto").__enter__()
gen32 = CTranslate2Generator(convert(M, os.path.join(d, "fp32")), compute_type="float32", inter_threads=1, intra_threads=1)
dq = FastDecoder(q, weights="auto").__enter__()
tot = collections.Counter() if False else {}
for i, b in enumerate(batches):
    r = {n: L(f(**b)) for n, f in (("fp32", d32.generate), ("int8", dq.generate), ("ct2_fp32", gen32.generate), ("ct2_int8", gen.generate))}
    print(i, " | ".join("%s max %d sum %d" % (n, v.max(), v.sum()) for n, v in r.items()))
    for n, v in r.items(): tot[n] = tot.get(n, 0) + int(v.sum())
print(tot)
