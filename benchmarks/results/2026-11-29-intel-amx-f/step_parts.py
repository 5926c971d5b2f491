import sys, time, warnings, statistics, collections, functools
import torch
warnings.simplefilter("ignore")
from transformers.utils import logging; logging.set_verbosity_error()
import zhen, zhen.fast_generation as fg
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast
from zhen.data import load_parallel
from zhen.evaluation import parallel_columns
torch.set_num_threads(2)
path = sys.argv[1]; beams = int(sys.argv[2]); src = sys.argv[3] if len(sys.argv) > 3 else "en"
tgt = "zh" if src == "en" else "en"
tok = ZhenTokenizerFast.from_pretrained(path)
m = ZhenForConditionalGeneration.from_pretrained(path).eval()
pairs = parallel_columns(load_parallel("../shared/data/tatoeba/valid.jsonl.gz"), 16)
texts = pairs[src]
acc = collections.defaultdict(float); cnt = collections.Counter()
def timed(cls, name, label=None):
    f = getattr(cls, name); label = label or name
    @functools.wraps(f)
    def g(*a, **k):
        s = time.perf_counter(); r = f(*a, **k); acc[label] += time.perf_counter() - s; cnt[label] += 1; return r
    setattr(cls, name, g)
timed(fg.DecoderSteps, "run_layer_steps"); timed(fg.DecoderSteps, "logits"); timed(fg.BeamSearch, "choose")
timed(fg.DecoderSteps, "reorder"); timed(fg.DecoderSteps, "step"); timed(fg.FastDecoder, "encode")
timed(fg.FastDecoder, "decoder_steps"); timed(fg.FastDecoder, "generate"); timed(fg.BeamSearch, "drop_done")
timed(fg.DecoderSteps, "expand")
import zhen.translation as tr
for t in texts[:4]: zhen.translate(t, m, tok, src_lang=src, tgt_lang=tgt, num_beams=beams)
acc.clear(); cnt.clear()
total = 0
for r in range(2):
  for t in texts:
    s=time.perf_counter(); o=zhen.translate(t, m, tok, src_lang=src, tgt_lang=tgt, num_beams=beams); total += time.perf_counter()-s
n = 2*len(texts)
print(f"call {total/n*1e3:.2f} ms; steps/call {cnt['step']/n:.1f}")
for k, v in sorted(acc.items(), key=lambda x: -x[1]): print(f"  {k:18s} {v/n*1e3:7.2f} ms/call  {v/cnt[k]*1e3:7.3f} ms each  x{cnt[k]/n:.1f}")
