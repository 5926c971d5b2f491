"""Where a greedy int8 translation of 1000 Tatoeba sentences (batches of 64, one stream, one thread) spends its time,
by step rows; CTranslate2 int8 one thread for comparison."""
import sys, time, collections, warnings, torch, os, tempfile
warnings.simplefilter("ignore")
torch.set_num_threads(1)
exec(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "setup_tatoeba_batches.py")).read())
acc = collections.Counter(); cnt = collections.Counter()
orig_step = fg.DecoderSteps.step
def bucket(r): return "1-4" if r <= 4 else "5-16" if r <= 16 else "17-32" if r <= 32 else "33-64"
def step(self, tokens, position):
    t = time.perf_counter(); h = orig_step(self, tokens, position); 
    b = bucket(len(tokens)); acc["layers " + b] += time.perf_counter() - t; cnt[b] += 1; self._b = b; return h
orig_nt = fg.DecoderSteps.next_tokens
def next_tokens(self, h, banned=None):
    t = time.perf_counter(); r = orig_nt(self, h, banned); acc["head+argmax " + self._b] += time.perf_counter() - t; return r
orig_enc = fg.FastDecoder.encode
def encode(self, *a, **k):
    t = time.perf_counter(); r = orig_enc(self, *a, **k); acc["encode"] += time.perf_counter() - t; return r
fg.DecoderSteps.step, fg.DecoderSteps.next_tokens, fg.FastDecoder.encode = step, next_tokens, encode
with torch.inference_mode(), fg.FastDecoder(q, script_layers=True) as s:
    for b in batches[:3]: s.generate(**b)
    for r in range(2):
        acc.clear(); cnt.clear()
        t = time.perf_counter()
        for b in batches: s.generate(**b)
        total = time.perf_counter() - t
print(f"zhen int8 {src}-{tgt}: total {total*1e3:.0f} ms; steps {dict(cnt)}")
for k, v in sorted(acc.items()): print(f"  {k:22s} {v*1e3:7.1f} ms" + (f"  {v/cnt[k.split()[-1]]*1e6:6.0f} us/step" if k.split()[-1] in cnt else ""))
print(f"  other {1e3*(total - sum(acc.values())):.1f} ms")
from zhen.convert_ctranslate2 import CTranslate2Generator, convert
d = tempfile.mkdtemp(); out = convert(M, os.path.join(d, "int8"), quantization="int8")
g = CTranslate2Generator(out, compute_type="int8", inter_threads=1, intra_threads=1)
for r in range(3):
    t = time.perf_counter()
    for b in batches: g.generate(**b)
    print(f"ct2 int8 total {1e3*(time.perf_counter()-t):.0f} ms")
