"""The encoder of the padded batches through the compiled program over the packed tokens against the packed forwards:
bit-equality and seconds (seven turns, order alternating, medians). T=threads, CORPUS=tatoeba|news, SESSION=int8|float32 (float32: run with ZHEN_HARDWARE=cpu_bf16=emulated, a CPU without bf16)."""
import os, sys, time, warnings, statistics, torch
warnings.simplefilter("ignore")
torch.set_num_threads(int(os.environ.get("T", "1")))
exec(open("benchmarks/results/2026-11-30-zen4-s/setup_batches.py").read())
SESSION = os.environ.get("SESSION", "int8")  # or "float32": the model's own weights, the session's float32 packing
with torch.inference_mode(), fg.FastDecoder(q if SESSION == "int8" else model, weights="auto", script_layers=True) as s:
    enc = q.get_encoder()
    padded = [b for b in batches if not bool(b["attention_mask"].all())]
    prog = [s.encode(b["input_ids"], b["attention_mask"], script_layers=True) for b in padded]
    fw = [s.encode(b["input_ids"], b["attention_mask"], script_layers=False) for b in padded]
    print("padded batches", len(padded), "bit-equal", all(torch.equal(a, c) for a, c in zip(prog, fw)))
    res = {True: [], False: []}
    for r in range(7):
        for k in ((True, False) if r % 2 == 0 else (False, True)):
            t = time.perf_counter(); [s.encode(b["input_ids"], b["attention_mask"], script_layers=k) for b in padded]; res[k].append(time.perf_counter() - t)
    print("encoder of padded batches: program", f"{statistics.median(res[True])*1e3:.0f} ms, forwards {statistics.median(res[False])*1e3:.0f} ms, ratio {statistics.median([b/a for a, b in zip(res[True], res[False])]):.3f}")
