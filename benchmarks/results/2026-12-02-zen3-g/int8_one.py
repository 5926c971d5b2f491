import sys
src = open("benchmarks/results/2026-12-02-zen3-g/int8_rounds.py").read()
src = src.replace("intra_threads=max(1, 2 // streams)", "intra_threads=1").replace("torch.set_num_threads(2)", "torch.set_num_threads(1)").replace('streams = decoding_streams(torch.device("cpu"))', "streams = 1")
exec(src.split("for r in range(4):")[0])
import time
for r in range(4):
    for name, f in (("zhen", zhen_run), ("ct2", ct2_run)):
        t = time.perf_counter(); o = f(); dt = time.perf_counter() - t
        print(r, name, round(1000 / dt, 1), "sent/s")
