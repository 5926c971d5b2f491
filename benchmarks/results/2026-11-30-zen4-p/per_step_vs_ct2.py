import sys, time, torch, warnings
warnings.simplefilter("ignore")
torch.set_num_threads(1)
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast
from zhen.data import load_parallel
from zhen.evaluation import parallel_columns
import zhen.fast_generation as fg
from zhen.quantization import quantize_dynamic
from zhen.convert_ctranslate2 import CTranslate2Generator
path = "/tmp/s36/small-cpu/model"
model = ZhenForConditionalGeneration.from_pretrained(path, dtype=torch.float32).eval()
tok = ZhenTokenizerFast.from_pretrained(path)
cols = parallel_columns(load_parallel("/work/shared/data/tatoeba/valid.jsonl.gz"), 64)
q = quantize_dynamic(model)
gen = CTranslate2Generator("/tmp/s38/ct2-int8", compute_type="int8", inter_threads=1, intra_threads=1)
tok.src_lang, tok.tgt_lang = "en", "zh"
zh = tok.get_lang_id("zh")
def timed(f, n=5):
    ts = []
    for _ in range(n):
        t = time.perf_counter(); f(); ts.append(time.perf_counter() - t)
    return sorted(ts)[n // 2]
with torch.inference_mode(), fg.FastDecoder(q, weights="auto") as dec:
    for rows in (1, 2, 4, 16, 32, 64):
        b = tok(cols["en"][:rows], return_tensors="pt", padding=True)
        res = {}
        for N in (11, 81):
            kw = dict(forced_bos_token_id=zh, num_beams=1, max_new_tokens=N, min_new_tokens=N)
            res[("zhen", N)] = timed(lambda: dec.generate(**b, **kw))
            res[("ct2", N)] = timed(lambda: gen.generate(**b, **kw))
        z = (res[("zhen", 81)] - res[("zhen", 11)]) / 70 * 1e3
        c = (res[("ct2", 81)] - res[("ct2", 11)]) / 70 * 1e3
        print(f"rows {rows}: ms/step zhen {z:.3f} ct2 {c:.3f} ratio ct2/zhen {c/z:.2f}; fixed(11 steps) zhen {res[('zhen',11)]*1e3:.1f} ct2 {res[('ct2',11)]*1e3:.1f}", flush=True)
