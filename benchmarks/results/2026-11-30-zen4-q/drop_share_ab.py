import os, sys, time, warnings, torch
warnings.simplefilter("ignore")
torch.set_num_threads(1)
exec(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "setup_tatoeba_batches.py")).read())
shares = [float(x) for x in sys.argv[2].split(",")]
beams = int(sys.argv[3]) if len(sys.argv) > 3 else 1
bs = [dict(b, num_beams=beams) for b in batches]
res = {x: [] for x in shares}
with torch.inference_mode(), fg.FastDecoder(q, script_layers=True) as s:
    for b in bs[:3]: s.generate(**b)
    outs = {}
    for r in range(5):
        for x in (shares if r % 2 == 0 else shares[::-1]):
            fg.DROP_FINISHED_SHARE = x
            t = time.perf_counter()
            outs[x] = [s.generate(**b) for b in bs]
            res[x].append(time.perf_counter() - t)
base = shares[0]
for x in shares:
    same = all(torch.equal(a, b) for a, b in zip(outs[x], outs[base]))
    print(f"share {x}: best {min(res[x])*1e3:.0f} ms, median {sorted(res[x])[2]*1e3:.0f} ms, speed vs {base}: {min(res[base])/min(res[x]):.3f}; same ids {same}")
