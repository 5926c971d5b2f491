import os, sys, time, warnings, torch
warnings.simplefilter("ignore")
torch.set_num_threads(1)
exec(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "setup_tatoeba_batches.py")).read())
import zhen.refill as rf
from zhen.pipeline_zhen import default_max_new_tokens
srcs = list(ids)
limits = [default_max_new_tokens(len(x), model.config, model.generation_config) for x in srcs]
bos = tok.get_lang_id(tgt)
res = {"batches": [], "refill": []}
with torch.inference_mode(), fg.FastDecoder(q, script_layers=True) as s:
    for b in batches[:3]: s.generate(**b)
    rf.refilled_greedy_search(s, srcs, limits, 64, bos)
    for r in range(4):
        t = time.perf_counter()
        for b in batches: s.generate(**b)
        res["batches"].append(time.perf_counter() - t)
        t = time.perf_counter()
        rf.refilled_greedy_search(s, srcs, limits, 64, bos)
        res["refill"].append(time.perf_counter() - t)
print({k: [round(x*1e3) for x in v] for k, v in res.items()}, "ratio of mins", min(res["batches"]) / min(res["refill"]))
