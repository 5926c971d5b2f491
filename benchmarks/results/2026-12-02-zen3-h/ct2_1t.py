exec(open("benchmarks/results/2026-12-02-zen3-h/enc_probe.py").read().split("q = quantize_dynamic")[0])
d = tempfile.mkdtemp()
out = convert(M, os.path.join(d, "int8"), quantization="int8")
gen = CTranslate2Generator(out, compute_type="int8", inter_threads=1, intra_threads=1)
src, tgt = sys.argv[1], sys.argv[2]
mnt = lambda n: max(1, min(int(1.5 * n) + 10, 511))
rows, batches = make_batches(tok, cols[src], src, tgt, 64, 1, mnt)
for n in (1, 2, 0, 1, 2, 0):
    t = time.perf_counter()
    for b in batches: gen.generate(**({**b, "max_new_tokens": n} if n else b))
    print(n, "%.3f" % (time.perf_counter() - t))
