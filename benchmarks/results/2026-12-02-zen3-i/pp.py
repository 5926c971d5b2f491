# The 2026-12-01-zen3-b packed_products.py probe (its `run`), three turns over decoder (M=64) and encoder
# (M=512, 1536) shapes: single-thread float32 products by oneDNN / MKL packing / plain linear, GFLOP/s (sweep, same weight).
exec(open("benchmarks/results/2026-12-01-zen3-b/packed_products.py").read().split("dec = [")[0])
dec = [(512, 1536), (512, 512), (512, 512), (512, 2048), (2048, 512)]
enc = [(512, 1536), (512, 512), (512, 2048), (2048, 512)]
for rep in range(3):
  for M, shapes in ((64, dec), (512, enc), (1536, enc)):
    print(M, {p: tuple(round(v,1) for v in run(M, shapes, p)) for p in ("onednn", "mkl", "plain")}, flush=True)
