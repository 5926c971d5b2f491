import os, sys, time, warnings, torch, gc, statistics
warnings.simplefilter("ignore")
torch.set_num_threads(1)
exec(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "setup_batches.py")).read())
print("tracked objects", len(gc.get_objects()), "thresholds", gc.get_threshold(), flush=True)
counts = []
gc.callbacks.append(lambda phase, info: counts.append(info["generation"]) if phase == "start" else None)
res = {}
with torch.inference_mode(), fg.FastDecoder(q, script_layers=True) as s:
    for b in batches[:3]: s.generate(**b)
    for r in range(4):
        for mode in ("default", "frozen", "disabled"):
            gc.unfreeze(); gc.enable()
            if mode == "frozen": gc.freeze()
            if mode == "disabled": gc.disable()
            counts.clear()
            t = time.perf_counter()
            for b in batches: s.generate(**b)
            res.setdefault(mode, []).append(time.perf_counter() - t)
            if r == 0: print(mode, "collections by generation", [counts.count(g) for g in range(3)], flush=True)
gc.unfreeze(); gc.enable()
for m, v in res.items(): print(m, " ".join(f"{x*1e3:.0f}" for x in v), "median", f"{statistics.median(v)*1e3:.0f}")
