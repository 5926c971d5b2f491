import os, sys, time, warnings, torch
warnings.simplefilter("ignore")
mode = sys.argv[2]
torch.set_num_threads(2 if mode == "threads" else 1)
exec(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "setup_tatoeba_batches.py")).read())
with torch.inference_mode(), fg.FastDecoder(q, script_layers=True) as s:
    for b in batches[:3]: s.generate(**b)
    for r in range(3):
        t = time.perf_counter()
        if mode == "threads":
            list(s.map(lambda kw: s.generate(**kw), batches + batches, 2))
        else:
            for b in batches: s.generate(**b)
        print(mode, f"{(time.perf_counter()-t)*1e3:.0f} ms", flush=True)
