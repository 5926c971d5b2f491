"""One text a call (zhen.translate(text)), greedy and beam 4: the bf16 session's LM head screened or not (the rule
patched per arm; each arm its own model copy, so each keeps its session), taking turns call by call. argv: model,
test, calls, beams"""
import gzip, json, sys, time, statistics
import torch
from zhen import ZhenForConditionalGeneration, translate, hardware
from transformers import AutoTokenizer
model_dir, test, n, beams = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
pairs = [json.loads(l) for l in gzip.open(test, "rt")][:n]
tok = AutoTokenizer.from_pretrained(model_dir)
models = {k: ZhenForConditionalGeneration.from_pretrained(model_dir).eval() for k in ("screened", "bf16 head")}
flag = {"on": True}
hardware.Hardware.int8_outruns_bf16 = lambda self: flag["on"]
for src, tgt in (("en", "zh"), ("zh", "en")):
    times = {k: [] for k in models}
    for rnd in range(2):
        for p in pairs:
            for k, m in models.items():
                flag["on"] = k == "screened"
                s = time.perf_counter()
                translate(p[src], m, tok, src_lang=src, tgt_lang=tgt, num_beams=beams)
                if rnd:
                    times[k].append(time.perf_counter() - s)
    ratios = [b / a for a, b in zip(times["screened"], times["bf16 head"])]
    print(f"{src}->{tgt} beams {beams}: median ms screened {statistics.median(times['screened'])*1e3:.1f}, bf16 head "
          f"{statistics.median(times['bf16 head'])*1e3:.1f}; paired ratio median {statistics.median(ratios):.3f}, total "
          f"{sum(times['bf16 head'])/sum(times['screened']):.3f}", flush=True)
