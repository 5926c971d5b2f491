import os, sys, time, warnings, torch
warnings.simplefilter("ignore")
torch.set_num_threads(1)
exec(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "setup_batches.py")).read())
from zhen.convert_ctranslate2 import CTranslate2Generator
g = CTranslate2Generator("/tmp/s38/ct2-int8", compute_type="int8", inter_threads=1, intra_threads=1)
for b in batches[:3]: g.generate(**b)
print("ready", flush=True)
time.sleep(1)
for r in range(int(os.environ.get("ROUNDS", "2"))):
    t = time.perf_counter()
    for b in batches: g.generate(**b)
    print(f"ct2 {1e3*(time.perf_counter()-t):.0f} ms", flush=True)
