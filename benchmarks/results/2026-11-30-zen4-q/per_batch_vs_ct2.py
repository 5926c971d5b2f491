import sys, time, warnings, torch, os, tempfile
warnings.simplefilter("ignore")
torch.set_num_threads(1)
exec(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "setup_tatoeba_batches.py")).read())
from zhen.convert_ctranslate2 import CTranslate2Generator, convert
d = tempfile.mkdtemp(); out = convert(M, os.path.join(d, "int8"), quantization="int8")
g = CTranslate2Generator(out, compute_type="int8", inter_threads=1, intra_threads=1)
import collections
tz, tc = collections.defaultdict(list), collections.defaultdict(list)
with torch.inference_mode(), fg.FastDecoder(q, script_layers=True) as s:
    for b in batches[:3]: s.generate(**b)
    for r in range(3):
        for i, b in enumerate(batches):
            t = time.perf_counter(); oz = s.generate(**b); tz[i].append(time.perf_counter() - t)
            t = time.perf_counter(); oc = g.generate(**b); tc[i].append(time.perf_counter() - t)
            if r == 0: tz[i, "len"] = (oz.shape[1], oc.shape[1])
for i in range(len(batches)):
    z, c = min(tz[i]) * 1e3, min(tc[i]) * 1e3
    print(f"batch {i:2d} src {tuple(batches[i]['input_ids'].shape)} out {tz[i,'len']}: zhen {z:6.1f} ms ct2 {c:6.1f} ms ratio {c/z:.2f}")
print("total", sum(min(tz[i]) for i in range(len(batches))), sum(min(tc[i]) for i in range(len(batches))))
