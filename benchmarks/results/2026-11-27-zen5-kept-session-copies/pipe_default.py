import time, torch, warnings
warnings.simplefilter("ignore")
torch.set_num_threads(2)
import zhen
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast, ZhenTranslationPipeline
from zhen.data import load_parallel
from zhen.evaluation import parallel_columns
M="/tmp/rt/small/model"
model = ZhenForConditionalGeneration.from_pretrained(M).eval()
tok = ZhenTokenizerFast.from_pretrained(M)
texts = parallel_columns(load_parallel("/work/shared/data/tatoeba/valid.jsonl.gz"), 128)["en"]
pipe = ZhenTranslationPipeline(model=model, tokenizer=tok, device=-1, tgt_lang="zh", src_lang="en")
def t(f):
    f(); s=time.perf_counter(); r=f(); return time.perf_counter()-s, r
for name, f in (("pipeline(list), no batch_size", lambda: pipe(texts)),
                ("pipeline(list, batch_size=32)", lambda: pipe(texts, batch_size=32)),
                ("pipeline(list, batch_size=64)", lambda: pipe(texts, batch_size=64)),
                ("zhen.translate(list)", lambda: zhen.translate(texts, model, tok, src_lang="en", tgt_lang="zh"))):
    dt, r = t(f)
    print(f"{name}: {len(texts)/dt:.0f} sent/s")
a = [x["translation_text"] for x in pipe(texts)]; b = [x["translation_text"] for x in pipe(texts, batch_size=32)]
print("same translations batched and not:", sum(x==y for x,y in zip(a,b)), "/", len(a))
