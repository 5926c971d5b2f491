import os, sys, time, torch, warnings
warnings.simplefilter("ignore")
torch.set_num_threads(1)
exec(open("benchmarks/results/2026-11-30-zen4-s/setup_batches.py").read())
with torch.inference_mode(), fg.FastDecoder(q, weights="auto", script_layers=False) as dec:
    for b in batches: dec.encode(b["input_ids"], b["attention_mask"], script_layers=False)
    t0 = time.perf_counter()
    for b in batches: dec.encode(b["input_ids"], b["attention_mask"], script_layers=False)
    print(f"encode all {1e3*(time.perf_counter()-t0):.0f} ms; tokens {sum(int(b['attention_mask'].sum()) for b in batches)}")
    with torch.profiler.profile() as prof:
        for b in batches: dec.encode(b["input_ids"], b["attention_mask"], script_layers=False)
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=16))
