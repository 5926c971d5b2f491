exec(open("benchmarks/results/2026-12-02-zen3-h/enc_probe2.py").read().split("fns = {")[0])
import resource
def cpu(): 
    r = resource.getrusage(resource.RUSAGE_SELF); return r.ru_utime + r.ru_stime
for name, f in (("zhen", zhen_full), ("ct2", ct2(0)), ("zhen", zhen_full), ("ct2", ct2(0)), ("zhen_enc", zhen_enc), ("ct2_1", ct2(1))):
    f()
    c, t = cpu(), time.perf_counter()
    for _ in range(3): f()
    dt = time.perf_counter() - t
    print(name, "wall %.2f s  cpu %.2f s  busy %.0f%%" % (dt / 3, (cpu() - c) / 3, 100 * (cpu() - c) / dt / 2))
