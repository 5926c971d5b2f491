exec(open("benchmarks/results/2026-12-02-zen3-h/steptime.py").read().split("T = collections")[0])
T = collections.defaultdict(float); N = collections.Counter()
os_, on_ = ds.DecoderSteps.step, ds.DecoderSteps.next_tokens
def step(self, tokens, position):
    t = time.perf_counter(); r = os_(self, tokens, position); k = ("step", len(tokens) if len(tokens) in (64, 8, 16) else "other")
    T[k] += time.perf_counter() - t; N[k] += 1; return r
def nt(self, h, banned=None):
    t = time.perf_counter(); r = on_(self, h, banned); k = ("next", len(h) if len(h) in (64, 8, 16) else "other")
    T[k] += time.perf_counter() - t; N[k] += 1; return r
ds.DecoderSteps.step = step; ds.DecoderSteps.next_tokens = nt
oi = ds.DecoderSteps.__init__
def init(self, *a, **k):
    t = time.perf_counter(); oi(self, *a, **k); T["init"] += time.perf_counter() - t; N["init"] += 1
ds.DecoderSteps.__init__ = init
dec.encode = timed("encode", dec.encode) if False else dec.encode
def run(): return list(dec.generate_batches(batches, 1))
run(); run()
T.clear(); N.clear()
t = time.perf_counter()
for _ in range(3): run()
tot = (time.perf_counter() - t) / 3
print("total %.3f s" % tot)
for k in sorted(T, key=str): print(k, "%.3f s  %d calls  %.0f us/call" % (T[k] / 3, N[k] / 3, 1e6 * T[k] / N[k]))
