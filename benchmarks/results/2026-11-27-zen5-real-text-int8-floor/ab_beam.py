import sys, time, torch, warnings, os
sys.path.insert(0, "/work/main/benchmarks"); sys.path.insert(0, "/tmp/p13")
warnings.simplefilter("ignore")
torch.set_num_threads(2)
from bleu_int8 import translate_ids
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast
from zhen.data import load_parallel
from zhen.evaluation import parallel_columns
import zhen.fast_generation as fg
from zhen.quantization import quantize_dynamic
import scripted_beam
orig = fg.beam_search
M="/tmp/rt/small/model"
model = ZhenForConditionalGeneration.from_pretrained(M, dtype=torch.float32).eval()
tok = ZhenTokenizerFast.from_pretrained(M)
cols = parallel_columns(load_parallel("/work/shared/data/tatoeba/valid.jsonl.gz"), 500)
q = quantize_dynamic(model)
mnt = lambda L: max(1, min(int(1.5*L)+10, 512))
S=int(os.environ.get("S",2))
def run(src,tgt):
    with torch.inference_mode(), fg.FastDecoder(q, weights="auto") as dec:
        return translate_ids(lambda b: list(dec.map(lambda kw: dec.generate(**kw), b, S)), tok, cols[src], src, tgt, 64, 4, mnt)
res={}
for r in range(int(os.environ.get("R",6))):
  for src,tgt in (("en","zh"),("zh","en")):
    for name,f in (("plain",orig),("scripted",scripted_beam.beam_search)):
      fg.beam_search=f
      if S==1: torch.set_num_threads(1)
      t=time.perf_counter(); out=run(src,tgt); s=500/(time.perf_counter()-t)
      res.setdefault((src,name),[]).append(s); res.setdefault((src,name,"out"),out)
for src in ("en","zh"):
  print(src, "same output:", res[(src,"plain","out")]==res[(src,"scripted","out")])
  for name in ("plain","scripted"):
    v=res[(src,name)]; print(src, name, " / ".join(f"{x:.0f}" for x in v), "median", sorted(v)[len(v)//2])
