exec(open("benchmarks/results/2026-12-02-zen3-h/perstep.py").read().split("tok.src_lang")[0])
src, tgt = sys.argv[1], sys.argv[2]
mnt = lambda n: max(1, min(int(1.5 * n) + 10, 511))
rows, batches = make_batches(tok, cols[src], src, tgt, 64, 1, mnt)
dec = FastDecoder(q, weights="auto").__enter__()
torch.inference_mode().__enter__()
import collections
T = collections.defaultdict(list)
for r in range(0):
    for i, b in enumerate(batches):
        for name, f in ((("ct2", gen.generate), ("zhen", dec.generate)) if (r + i) % 2 else (("zhen", dec.generate), ("ct2", gen.generate))):
            t = time.perf_counter(); f(**b); T[name, i].append(time.perf_counter() - t)
L = lambda o: (o[:, 1:] != tok.pad_token_id).sum(1)
for i, b in enumerate(batches):
    z, c = L(dec.generate(**b)), L(gen.generate(**b))
    print(i, "zhen max %d sum %d | ct2 max %d sum %d" % (z.max(), z.sum(), c.max(), c.sum()))
