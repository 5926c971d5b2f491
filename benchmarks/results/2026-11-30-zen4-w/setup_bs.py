BS = int(os.environ.get("BS", "64"))
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast
from zhen.data import load_parallel
from zhen.evaluation import parallel_columns
import zhen.fast_generation as fg
from zhen.quantization import quantize_dynamic
M = os.environ.get("MODEL", "/tmp/s36/small-cpu/model")
src, tgt = (sys.argv[1] if len(sys.argv) > 1 else "en-zh").split("-")
model = ZhenForConditionalGeneration.from_pretrained(M, dtype=torch.float32).eval()
tok = ZhenTokenizerFast.from_pretrained(M)
cols = parallel_columns(load_parallel(f"../shared/data/{os.environ.get('CORPUS', 'tatoeba')}/{os.environ.get('SPLIT', 'valid')}.jsonl.gz"), int(os.environ.get('N', '1000')))
tok.src_lang, tok.tgt_lang = src, tgt
ids = tok(cols[src])["input_ids"]
order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))
batches = []
for s_ in range(0, len(order), BS):
    rows_ = order[s_:s_+BS]
    b_ = tok.pad({"input_ids": [ids[i] for i in rows_]}, return_tensors="pt")
    L_ = max(len(ids[i]) for i in rows_)
    batches.append(dict(input_ids=b_["input_ids"], attention_mask=b_["attention_mask"], forced_bos_token_id=tok.get_lang_id(tgt), num_beams=int(os.environ.get("BEAMS", "1")), max_new_tokens=int(1.5*L_)+10))
q = quantize_dynamic(model)
