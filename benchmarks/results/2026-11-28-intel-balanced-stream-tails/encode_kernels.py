"""The session's packed encoder on a batch of 64 Tatoeba sentences (`small-cpu`, float32 and int8, one and two
threads): each attention group through SDPA's flash kernel (the default) or as two matmuls and a softmax; µs a batch
and the largest difference of the outputs."""
import sys, warnings
import torch
sys.path.insert(0, "/work/main/benchmarks/results/2026-11-27-intel-session-reuse-mkl-packing")
warnings.simplefilter("ignore")
from probes import best_us
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast, packing
from zhen.data import load_parallel
from zhen.evaluation import parallel_columns
from zhen.fast_generation import FastDecoder
from zhen.quantization import quantize_dynamic

model = ZhenForConditionalGeneration.from_pretrained(sys.argv[1], dtype=torch.float32).eval()
tok = ZhenTokenizerFast.from_pretrained(sys.argv[1])
sdpa = packing._sdpa_attention
cols = parallel_columns(load_parallel(sys.argv[2]), 500)
for lang, other in (("en", "zh"), ("zh", "en")):
    texts = sorted(cols[lang], key=len)[200:264]
    enc = tok(texts, src_lang=lang, tgt_lang=other, return_tensors="pt", padding=True)
    print(lang, "shape", tuple(enc.input_ids.shape), "real tokens", int(enc.attention_mask.sum()))
    for name, m in (("float32", model), ("int8", quantize_dynamic(model))):
        for threads in (1, 2):
            torch.set_num_threads(threads)
            out = {}
            with torch.inference_mode(), FastDecoder(m, weights="auto") as dec:
                for kernel in ("sdpa", "matmul", "sdpa", "matmul"):
                    packing._sdpa_attention = sdpa if kernel == "sdpa" else packing._matmul_attention
                    f = lambda: dec.encode(enc.input_ids, enc.attention_mask)
                    out.setdefault(kernel, []).append(round(best_us(f, 10)))
                    out[kernel + "_y"] = f()
            packing._sdpa_attention = sdpa
            diff = (out["sdpa_y"] - out["matmul_y"]).abs().max().item()
            print(f"  {name} {threads} thread(s): sdpa {out['sdpa']} µs, matmul {out['matmul']} µs, max diff {diff:.2e}")
