import os, sys, time, warnings, torch
warnings.simplefilter("ignore")
torch.set_num_threads(1)
exec(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "setup_tatoeba_batches.py")).read())
beams = int(sys.argv[2]) if len(sys.argv) > 2 else 1
bs = [dict(b, num_beams=beams) for b in batches] if beams == 1 else [dict(b, num_beams=beams) for b in batches]
new_in_place = fg._in_place
variants = {"copy all (before)": lambda rows: 0, "rows in place stay (now)": new_in_place}
res = {k: [] for k in variants}; kept = {k: 0.0 for k in variants}; kept[None] = 0.0; cur = [None]
orig_keep = fg._keep_rows
def timed_keep(*a, **k):
    t = time.perf_counter(); r = orig_keep(*a, **k); kept[cur[0]] += time.perf_counter() - t; return r
fg._keep_rows = timed_keep

with torch.inference_mode(), fg.FastDecoder(q, script_layers=True) as s:
    for b in bs[:3]: s.generate(**b)
    outs = {}
    for r in range(6):
        for k in (list(variants) if r % 2 == 0 else list(variants)[::-1]):
            fg._in_place = variants[k]; cur[0] = k
            t = time.perf_counter()
            outs[k] = [s.generate(**b) for b in bs]
            res[k].append(time.perf_counter() - t)
a, b = list(variants)
print("same ids:", all(torch.equal(x, y) for x, y in zip(outs[a], outs[b])))
for k in variants:
    print(f"{k}: best {min(res[k])*1e3:.0f} ms, median {sorted(res[k])[3]*1e3:.0f} ms; copies {kept[k]/6*1e3:.1f} ms a run")
print(f"speed now/before (best): {min(res[a])/min(res[b]):.3f}, (median): {sorted(res[a])[3]/sorted(res[b])[3]:.3f}")
