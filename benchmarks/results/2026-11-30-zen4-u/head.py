import os, sys, time, torch, warnings
warnings.simplefilter("ignore")
torch.set_num_threads(1)
exec(open("benchmarks/results/2026-11-30-zen4-s/setup_batches.py").read())
def t(f, n=100):
    for _ in range(5): f()
    t0 = time.perf_counter()
    for _ in range(n): f()
    return (time.perf_counter() - t0) / n * 1e6
with torch.inference_mode(), fg.FastDecoder(q, weights="auto") as dec:
    head = q.lm_head
    print(type(head).__name__, getattr(head, "__dict__", {}).keys() if False else "")
    for m in head.modules(): print(" ", type(m).__name__)
    for rows in (1, 4, 16, 64):
        h = torch.randn(rows, 256)
        lg = head(h)
        print(rows, f"head {t(lambda: head(h)):.0f} us  argmax {t(lambda: fg.argmax(lg)):.0f} us  torch.argmax {t(lambda: lg.argmax(-1)):.0f}  amax {t(lambda: lg.amax(-1)):.0f}")
