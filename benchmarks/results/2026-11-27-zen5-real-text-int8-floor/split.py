import sys, time, torch, warnings, os, threading, collections
sys.path.insert(0, "/work/main/benchmarks")
warnings.simplefilter("ignore")
torch.set_num_threads(2)
from bleu_int8 import translate_ids
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast
from zhen.data import load_parallel
from zhen.evaluation import parallel_columns
import zhen.fast_generation as fg
from zhen.quantization import quantize_dynamic
M="/tmp/rt/small/model"
model = ZhenForConditionalGeneration.from_pretrained(M, dtype=torch.float32).eval()
tok = ZhenTokenizerFast.from_pretrained(M)
cols = parallel_columns(load_parallel("/work/shared/data/tatoeba/valid.jsonl.gz"), 500)
q = quantize_dynamic(model)
mnt = lambda L: max(1, min(int(1.5*L)+10, 512))
T=collections.defaultdict(float); lock=threading.Lock()
def wrap(cls, name):
    f=getattr(cls,name)
    def g(*a, **k):
        t=time.perf_counter(); r=f(*a, **k); d=time.perf_counter()-t
        with lock: T[name]+=d
        return r
    setattr(cls,name,g)
for n in ("step","logits","reorder","keep","expand"): wrap(fg.DecoderSteps, n)
wrap(fg, "top_continuations"); 
orig_bs = fg.beam_search
def bs(*a, **k):
    t=time.perf_counter(); r=orig_bs(*a, **k); d=time.perf_counter()-t
    with lock: T["beam_search"]+=d
    return r
fg.beam_search=bs
orig_ds = fg.FastDecoder.decoder_steps
def ds(*a, **k):
    t=time.perf_counter(); r=orig_ds(*a, **k); d=time.perf_counter()-t
    with lock: T["decoder_steps(encode)"]+=d
    return r
fg.FastDecoder.decoder_steps=ds
for S in (1,2,1,2):
  for src,tgt in (("en","zh"),):
    T.clear(); t0=time.perf_counter()
    with torch.inference_mode(), fg.FastDecoder(q, weights="auto") as dec:
        translate_ids(lambda b: list(dec.map(lambda kw: dec.generate(**kw), b, S)), tok, cols[src], src, tgt, 64, 4, mnt)
    tot=time.perf_counter()-t0
    rest = T["beam_search"]-sum(T[k] for k in ("step","logits","reorder","keep","expand","top_continuations"))
    print(S, f"wall {tot*1e3:.0f} ms; summed over streams:", ", ".join(f"{k} {v*1e3:.0f}" for k,v in T.items()), f"rest-of-beam {rest*1e3:.0f}")
