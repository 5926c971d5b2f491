import resource, sys, time, torch, ctypes, warnings
warnings.filterwarnings("ignore")
torch.set_num_threads(1)
mode = sys.argv[1]
if mode != "default" and not mode.startswith("env"):
    mm, trim = (int(v) << 20 for v in mode.split(","))
    libc = ctypes.CDLL(None); print(libc.mallopt(-3, mm), libc.mallopt(-1, trim), end=" ")
head = torch.ao.nn.quantized.dynamic.Linear(512, 32000)
for rows in (32, 128):
    x = torch.randn(rows, 512)
    for _ in range(3): head(x)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    t = time.perf_counter()
    for _ in range(10): head(x)
    print(mode, rows, (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) // 10, f"{(time.perf_counter()-t)*100:.2f} ms", end=" | ")
print()
