import ctypes, time, torch, statistics, re
torch.set_num_threads(2)
libc = ctypes.CDLL("libc.so.6", use_errno=True)
MADV_HUGEPAGE, MADV_COLLAPSE = 14, 25
def regions():
    out = set()
    for line in open('/proc/self/maps'):
        f = line.split()
        if len(f) == 5 or (len(f) == 6 and f[5].startswith('[heap')):
            a, b = (int(x, 16) for x in f[0].split('-'))
            if b - a >= 2**21: out.add((a, b))
    return out
def collapse(regs):
    n = 0
    for a, b in regs:
        s = (a + 2**21 - 1) & ~(2**21 - 1); e = b & ~(2**21 - 1)
        if e > s:
            libc.madvise(ctypes.c_void_p(s), ctypes.c_size_t(e - s), MADV_HUGEPAGE)
            r = libc.madvise(ctypes.c_void_p(s), ctypes.c_size_t(e - s), MADV_COLLAPSE)
            n += (e - s) >> 21 if r == 0 else 0
    return n
def huge_kb():
    return [l for l in open('/proc/self/smaps_rollup') if 'AnonHuge' in l][0].split()[1]
shapes = [(1536, 512), (512, 512), (512, 512), (1024, 512), (512, 512), (2048, 512), (512, 2048)] * 6 + [(32000, 512)]
def make():
    return [torch.ops.mkldnn._reorder_linear_weight(torch.randn(s).to(torch.bfloat16), None) for s in shapes]
before = regions()
A = make()
print("collapsed huge pages", collapse(regions() - before), "AnonHugeKB", huge_kb())
B = make()
x = torch.randn(4, 512).to(torch.bfloat16); x2 = torch.randn(4, 2048).to(torch.bfloat16)
def step(ws):
    for w in ws:
        torch.ops.mkldnn._linear_pointwise(x2 if w.shape[1] == 2048 else x, w, None, "none", [], "")
ta, tb = [], []
for r in range(60):
    for ws, acc in ((A, ta), (B, tb)) if r % 2 == 0 else ((B, tb), (A, ta)):
        t = time.perf_counter(); step(ws); acc.append(time.perf_counter() - t)
ta, tb = ta[6:], tb[6:]
print("huge %.2f ms  plain %.2f ms  plain/huge %.3f" % (1e3*statistics.median(ta), 1e3*statistics.median(tb), statistics.median(tb)/statistics.median(ta)))
