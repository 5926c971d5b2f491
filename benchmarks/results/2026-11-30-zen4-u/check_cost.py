import os, sys, time, torch, warnings
warnings.simplefilter("ignore")
torch.set_num_threads(1)
exec(open("benchmarks/results/2026-11-30-zen4-s/setup_batches.py").read())
b = batches[0]
def t(f, n=100):
    for _ in range(5): f()
    t0 = time.perf_counter()
    for _ in range(n): f()
    return (time.perf_counter() - t0) / n * 1e6
with torch.inference_mode(), fg.FastDecoder(q, weights="auto") as dec:
    fg._DECODING.row_sums = dec.attends_by_row_sums
    for R in (1, 2, 4):
        st = dec.decoder_steps(b["input_ids"][:R], b["attention_mask"][:R], 1, 60)
        tok_ = torch.full((R,), 7)
        for p in range(20): st.step(tok_, p)
        line = [f"rows {R}: step {t(lambda: (st.step(tok_, 20), st.next_tokens(st.step(tok_, 20)))) / 2:.0f}"]
        for c in (2, 4, 8):
            toks = torch.full((R, c + 1), 7)
            line.append(f"check {c}+1: {t(lambda: st.next_tokens(st.steps(toks, 20))):.0f}")
        print("  ".join(line), "us")
