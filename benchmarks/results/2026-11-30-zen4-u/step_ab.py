import os, sys, time, torch, warnings, collections
warnings.simplefilter("ignore")
torch.set_num_threads(1)
exec(open("benchmarks/results/2026-11-30-zen4-s/setup_batches.py").read())
import zhen.refilling as rf
b = batches[3]
with torch.inference_mode(), fg.FastDecoder(q, weights="auto") as dec:
    fg._DECODING.row_sums = dec.attends_by_row_sums
    ps = dec.decoder_steps(b["input_ids"], b["attention_mask"], 1, 60)
    tok_ = torch.full((64,), 5)
    for p in range(12): ps.step(tok_, p)
    rs = dec.decoder_steps(b["input_ids"], b["attention_mask"], 1, 60, steps_class=rf.RefillingSteps, workspace=fg.Workspace())
    for p in range(12): rs.step_at(tok_, p)
    for r in range(3):
        t0 = time.perf_counter()
        for _ in range(50): ps.step(tok_, 12)
        t1 = time.perf_counter()
        for _ in range(50): rs.step_at(tok_, 12)
        t2 = time.perf_counter()
        print(f"plain {(t1-t0)/50*1e6:.0f} us  refill {(t2-t1)/50*1e6:.0f} us")
    h1 = ps.step(tok_, 12); h2 = rs.step_at(tok_, 12); print((h1-h2).abs().max())
