# zh->en / en->zh int8 greedy, one thread: session opening, decode, against CT2 on the same batches; alternating.
import os, statistics, sys, tempfile, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
from int8_batches import MODEL, greedy_batches, quantized as q
from zhen.convert_ctranslate2 import CTranslate2Generator, convert
from zhen.fast_generation import FastDecoder
out = convert(MODEL, os.path.join(tempfile.mkdtemp(), "int8"), quantization="int8")
ct2 = CTranslate2Generator(out, compute_type="int8", inter_threads=1, intra_threads=1)
direction = sys.argv[1] if len(sys.argv) > 1 else "zh-en"
batches = greedy_batches(direction, int(sys.argv[3]) if len(sys.argv) > 3 else None)
res = {"open": [], "zhen": [], "ct2": []}
with torch.inference_mode():
    for r in range(int(sys.argv[2]) if len(sys.argv) > 2 else 5):
        t = time.perf_counter()
        with FastDecoder(q, weights="auto") as dec:
            t1 = time.perf_counter()
            zo = list(dec.generate_batches(batches, 1))
            t2 = time.perf_counter()
        res["open"].append(t1 - t); res["zhen"].append(t2 - t1)
        t = time.perf_counter()
        co = [w() for w in [ct2.generate(**b, asynchronous=True) for b in batches]]
        res["ct2"].append(time.perf_counter() - t)
steps_z = sum(o.shape[1] for o in zo); steps_c = sum(o.shape[1] for o in co)
print(direction, {k: round(statistics.median(v) * 1000, 1) for k, v in res.items()},
      "ratio ct2/(open+zhen)", round(statistics.median(res["ct2"]) / statistics.median([a + b for a, b in zip(res["open"], res["zhen"])]), 3),
      "ratio ct2/zhen", round(statistics.median(res["ct2"]) / statistics.median(res["zhen"]), 3), "cols", steps_z, steps_c)
