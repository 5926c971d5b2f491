# in-situ: int8 greedy, head's many rows to oneDNN (as shipped) vs all FBGEMM; alternating rounds, one thread
import statistics, sys, time
sys.path.insert(0, "benchmarks/results/2026-12-01-zen4-y")
import torch
from int8_batches import greedy_batches, quantized as q
from zhen.fast_generation import FastDecoder
batches = greedy_batches(sys.argv[1])
head = q.get_output_embeddings()
shipped = head.many_rows_numel
res = {"onednn": [], "fbgemm": []}
outs = {}
with torch.inference_mode():
    for r in range(int(sys.argv[2])):
        for name, numel in (("onednn", shipped), ("fbgemm", sys.maxsize)):
            head.many_rows_numel = numel
            with FastDecoder(q, weights="auto") as dec:
                list(dec.generate_batches(batches, 1))
                t = time.perf_counter()
                o = list(dec.generate_batches(batches, 1))
                res[name].append(time.perf_counter() - t)
            outs[name] = [x.tolist() for x in o]
print(sys.argv[1], {k: round(statistics.median(v) * 1e3, 1) for k, v in res.items()}, "same outputs", outs["onednn"] == outs["fbgemm"])
