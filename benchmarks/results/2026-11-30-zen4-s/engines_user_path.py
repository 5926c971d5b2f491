"""What a user's process does, timed: imports and data, loading (zhen: float32 checkpoint + quantize_dynamic; CTranslate2: its int8
export and the tokenizer), translating N texts of CORPUS en->zh (zhen.translate / Translator.translate_batch, int8,
two threads, BEAMS). One process per run: MODE=zhen|ct2 N=1000 CORPUS=tatoeba|news BEAMS=1|4."""
import os, sys, time
t0 = time.perf_counter()
import torch, warnings
warnings.simplefilter("ignore")
from zhen.data import load_parallel
from zhen.evaluation import parallel_columns
texts = parallel_columns(load_parallel(f"../shared/data/{os.environ.get('CORPUS', 'tatoeba')}/valid.jsonl.gz"), int(os.environ.get("N", "1000")))["en"]
mode = os.environ["MODE"]
t1 = time.perf_counter()
if mode == "ct2":
    import ctranslate2
    from zhen import ZhenTokenizerFast
    tok = ZhenTokenizerFast.from_pretrained("/tmp/s36/small-cpu/model")
    tr = ctranslate2.Translator("/tmp/s38/ct2-int8", compute_type="int8", inter_threads=2, intra_threads=1)
    tl = time.perf_counter()
    tok.src_lang = "en"
    src = [tok.convert_ids_to_tokens(i) for i in tok(texts)["input_ids"]]
    zh = tok.convert_ids_to_tokens([tok.get_lang_id("zh")])
    res = tr.translate_batch(src, target_prefix=[zh] * len(src), beam_size=int(os.environ.get("BEAMS","1")), max_batch_size=64)
    out = [tok.decode(tok.convert_tokens_to_ids(r.hypotheses[0]), skip_special_tokens=True) for r in res]
else:
    from zhen.translation import load_model_and_tokenizer, translate
    model, tok = load_model_and_tokenizer("/tmp/s36/small-cpu/model", int8=True)
    tl = time.perf_counter()
    out = translate(texts, model, tok, src_lang="en", tgt_lang="zh", num_beams=int(os.environ.get("BEAMS","1")))
t2 = time.perf_counter()
print(mode, f"imports+data {1e3*(t1-t0):.0f} ms, load {1e3*(tl-t1):.0f} ms, translate {1e3*(t2-tl):.0f} ms, total {1e3*(t2-t0):.0f} ms", out[:2])
