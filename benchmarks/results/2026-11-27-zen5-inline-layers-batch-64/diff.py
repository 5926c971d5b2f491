import gzip, json, warnings; warnings.filterwarnings("ignore")
import zhen
from zhen.translation import load_model_and_tokenizer
rows = [json.loads(l) for l in gzip.open("/work/shared/data/news/valid.jsonl.gz", "rt")][:384]
model, tok = load_model_and_tokenizer("/tmp/rt/small/model")
texts = [r["en"] for r in rows]
a = zhen.translate(texts, model, tok, tgt_lang="zh", batch_size=32)
b = zhen.translate(texts, model, tok, tgt_lang="zh", batch_size=64)
c = zhen.translate(texts, model, tok, tgt_lang="zh", batch_size=32, max_new_tokens=200)
d = zhen.translate(texts, model, tok, tgt_lang="zh", batch_size=64, max_new_tokens=200)
diff = [i for i in range(len(a)) if a[i] != b[i]]
prefix = sum(a[i].startswith(b[i]) or b[i].startswith(a[i]) for i in diff)
print("default lengths: differ", len(diff), "of which prefix", prefix)
print("max_new_tokens=200: differ", sum(x != y for x, y in zip(c, d)))
