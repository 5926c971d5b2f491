import sys, time, torch, warnings, os
sys.path.insert(0, "/work/main/benchmarks"); sys.path.insert(0, "/tmp/p13")
warnings.simplefilter("ignore")
torch.set_num_threads(2)
os.environ["SCRIPT"]="0"
from bleu_int8 import translate_ids
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast
from zhen.data import load_parallel
from zhen.evaluation import parallel_columns
import zhen.fast_generation as fg
from zhen.quantization import quantize_dynamic
import chunked_beam
orig = fg.beam_search
M="/tmp/rt/small/model"
model = ZhenForConditionalGeneration.from_pretrained(M, dtype=torch.float32).eval()
tok = ZhenTokenizerFast.from_pretrained(M)
cols = parallel_columns(load_parallel("/work/shared/data/tatoeba/valid.jsonl.gz"), 500)
q = quantize_dynamic(model) if os.environ.get("Q","1")=="1" else model
mnt = lambda L: max(1, min(int(1.5*L)+10, 512))
S=int(os.environ.get("S",2))
def run(src,tgt):
    with torch.inference_mode(), fg.FastDecoder(q, weights="auto") as dec:
        return translate_ids(lambda b: list(dec.map(lambda kw: dec.generate(**kw), b, S)), tok, cols[src], src, tgt, 64, 4, mnt)
res={}
systems=[("plain",orig,None),("chunk64",chunked_beam.beam_search_chunked,64),("chunk32",chunked_beam.beam_search_chunked,32),("chunk128",chunked_beam.beam_search_chunked,128)]
for r in range(int(os.environ.get("R",4))):
  for src,tgt in (("en","zh"),("zh","en")):
    for name,f,c in systems:
      fg.beam_search=f
      if c: chunked_beam.CHUNK_ROWS=c
      if S==1: torch.set_num_threads(1)
      t=time.perf_counter(); out=run(src,tgt); s=500/(time.perf_counter()-t)
      res.setdefault((src,name),[]).append(s); res[(src,name,"out")]=out
for src in ("en","zh"):
  for name,_,_ in systems:
    v=res[(src,name)]; same=sum(a==b for a,b in zip(res[(src,name,"out")],res[(src,"plain","out")]))
    print(src, name, " / ".join(f"{x:.0f}" for x in v), "median", f"{sorted(v)[len(v)//2]:.0f}", "same as plain", same)
