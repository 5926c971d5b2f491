"""(streams_probe.py) small-cpu real text (1,000 Tatoeba, greedy, zhen.translate): the bf16 screen forced on (BF16_MIN_WEIGHT 0) against
the bf16 head, each arm its own model, taking turns, best of 3, in one stream and in two. argv: model test"""
import gzip, json, sys, time
import torch
from zhen import ZhenForConditionalGeneration, translate, fast_generation
from transformers import AutoTokenizer
model_dir, test = sys.argv[1], sys.argv[2]
pairs = [json.loads(l) for l in gzip.open(test, "rt")][:1000]
tok = AutoTokenizer.from_pretrained(model_dir)
models = {k: ZhenForConditionalGeneration.from_pretrained(model_dir).eval() for k in ("screened", "bf16 head")}
limits = {"screened": 0, "bf16 head": 1 << 40}
for streams in (1, 2):
    for src, tgt in (("en", "zh"), ("zh", "en")):
        texts = [p[src] for p in pairs]
        best = {}
        for _ in range(3):
            for k, m in models.items():
                fast_generation.BF16_MIN_WEIGHT = limits[k]
                s = time.perf_counter()
                translate(texts, m, tok, src_lang=src, tgt_lang=tgt, num_beams=1, streams=streams)
                best[k] = min(best.get(k, 1e9), time.perf_counter() - s)
        print(f"streams {streams} {src}->{tgt}: screened {best['screened']:.2f} s, bf16 head {best['bf16 head']:.2f} s, "
              f"{best['bf16 head'] / best['screened']:.3f}x", flush=True)
