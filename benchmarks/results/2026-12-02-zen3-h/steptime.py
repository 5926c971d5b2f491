exec(open("benchmarks/results/2026-12-02-zen3-h/enc_probe.py").read().split("gen = CTranslate2Generator")[0])
torch.set_num_threads(1)
import zhen.decoder_steps as ds, collections
src, tgt = sys.argv[1], sys.argv[2]
mnt = lambda n: max(1, min(int(1.5 * n) + 10, 511))
rows, batches = make_batches(tok, cols[src], src, tgt, 64, 1, mnt)
dec = FastDecoder(q, weights="auto").__enter__()
torch.inference_mode().__enter__()
T = collections.defaultdict(float); N = collections.Counter()
def timed(name, f):
    def g(*a, **k):
        t = time.perf_counter(); r = f(*a, **k); T[name] += time.perf_counter() - t; N[name] += 1; return r
    return g
ds.DecoderSteps.step = timed("step", ds.DecoderSteps.step)
ds.DecoderSteps.next_tokens = timed("next_tokens", ds.DecoderSteps.next_tokens)
dec.encode = timed("encode", dec.encode)
def run(): return list(dec.generate_batches(batches, 1))
run(); run()
T.clear(); N.clear()
t = time.perf_counter()
for _ in range(3): run()
tot = (time.perf_counter() - t) / 3
print("total %.3f s" % tot)
for k in T: print(k, "%.3f s  %d calls  %.0f us/call" % (T[k] / 3, N[k] / 3, 1e6 * T[k] / N[k]))
print("rest %.3f s" % (tot - sum(T.values()) / 3))
