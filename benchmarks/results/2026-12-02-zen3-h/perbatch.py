exec(open("benchmarks/results/2026-12-02-zen3-h/perstep.py").read().split("tok.src_lang")[0])
src, tgt = sys.argv[1], sys.argv[2]
mnt = lambda n: max(1, min(int(1.5 * n) + 10, 511))
rows, batches = make_batches(tok, cols[src], src, tgt, 64, 1, mnt)
dec = FastDecoder(q, weights="auto").__enter__()
torch.inference_mode().__enter__()
import collections
T = collections.defaultdict(list)
for r in range(4):
    for i, b in enumerate(batches):
        for name, f in ((("ct2", gen.generate), ("zhen", dec.generate)) if (r + i) % 2 else (("zhen", dec.generate), ("ct2", gen.generate))):
            t = time.perf_counter(); f(**b); T[name, i].append(time.perf_counter() - t)
tz = tc = 0
for i, b in enumerate(batches):
    z, c = min(T["zhen", i][1:]), min(T["ct2", i][1:]); tz += z; tc += c
    print(i, tuple(b["input_ids"].shape), "zhen %.1f ms  ct2 %.1f ms  ratio %.2f" % (1e3 * z, 1e3 * c, c / z))
print("sum zhen %.3f ct2 %.3f ratio %.2f" % (tz, tc, tc / tz))
