import sys, time, torch, warnings, os, resource
sys.path.insert(0, "/work/main/benchmarks")
warnings.simplefilter("ignore")
torch.set_num_threads(1)
from bleu_int8 import translate_ids
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast
from zhen.data import load_parallel
from zhen.evaluation import parallel_columns
from zhen.fast_generation import FastDecoder
from zhen.quantization import quantize_dynamic
import zhen.fast_generation as fg
M="/tmp/rt/small/model"
model = ZhenForConditionalGeneration.from_pretrained(M, dtype=torch.float32).eval()
tok = ZhenTokenizerFast.from_pretrained(M)
cols = parallel_columns(load_parallel("/work/shared/data/tatoeba/valid.jsonl.gz"), 500)
q = quantize_dynamic(model)
mnt = lambda L: max(1, min(int(1.5*L)+10, 512))
src,tgt = os.environ.get("DIR","en-zh").split("-")
T={}
orig = fg.DecoderSteps.logits
def logits(self, h):
    f0=resource.getrusage(resource.RUSAGE_SELF).ru_minflt; t=time.perf_counter()
    r = orig(self, h)
    d=time.perf_counter()-t; f1=resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    a=T.setdefault(h.shape[0],[0,0,0]); a[0]+=1; a[1]+=d; a[2]+=f1-f0
    return r
fg.DecoderSteps.logits = logits
def run():
    with torch.inference_mode(), FastDecoder(q, weights="auto") as dec:
        return translate_ids(lambda b: [dec.generate(**kw) for kw in b], tok, cols[src], src, tgt, 64, 4, mnt)
run(); T.clear()
f0=resource.getrusage(resource.RUSAGE_SELF).ru_minflt
os.write(2, b"MARK-START\n"); t=time.perf_counter(); run(); os.write(2, b"MARK-END\n"); print("run", time.perf_counter()-t, "faults", resource.getrusage(resource.RUSAGE_SELF).ru_minflt-f0)
for r,(n,d,f) in sorted(T.items()): print(r, n, f"{d/n*1e3:.2f} ms faults/call {f/n:.0f}")
