import os, sys, time, torch, warnings, collections
warnings.simplefilter("ignore")
torch.set_num_threads(1)
exec(open("benchmarks/results/2026-11-30-zen4-s/setup_batches.py").read())
import zhen.refilling as rf
b = batches[3]
with torch.inference_mode(), fg.FastDecoder(q, weights="auto", script_layers=False) as dec:
    fg._DECODING.row_sums = dec.attends_by_row_sums
    rs = dec.decoder_steps(b["input_ids"], b["attention_mask"], 1, 113, steps_class=rf.RefillingSteps, script_layers=False)
    tok_ = torch.full((64,), 5)
    for p in range(40): rs.step_at(tok_, p)
    for c in (4, 24, 39):
        t0 = time.perf_counter()
        for _ in range(50): rs.step_at(tok_, c)
        print(c, f"{(time.perf_counter()-t0)/50*1e6:.0f} us")
    for c in (4, 24):
        with torch.profiler.profile() as prof:
            for _ in range(30): rs.step_at(tok_, c)
        print(c); print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=12))
