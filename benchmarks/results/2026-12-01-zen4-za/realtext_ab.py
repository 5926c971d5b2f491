"""zhen.translate greedy on real text (small-cpu, Tatoeba valid, both directions), the bf16 session's screen on
(default here) and off (forced amx_int8=on: the class whose bf16 runs in tiles), taking turns, best of rounds;
BLEU of each and of the float32 session (forced cpu_bf16=emulated). argv: model, test file, limit, rounds"""
import gzip, json, sys, time, contextlib
import sacrebleu, torch
from zhen import ZhenForConditionalGeneration, translate, hardware
from transformers import AutoTokenizer
model_dir, test, limit, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
pairs = [json.loads(l) for l in gzip.open(test, "rt")][:limit]
models = {k: ZhenForConditionalGeneration.from_pretrained(model_dir).eval() for k in ("screened", "bf16 head", "float32")}  # each arm keeps its session copies
tok = AutoTokenizer.from_pretrained(model_dir)
arms = {"screened": contextlib.nullcontext, "bf16 head": lambda: hardware.forced(amx_int8="on"),
        "float32": lambda: hardware.forced(cpu_bf16="emulated")}
for src, tgt in (("en", "zh"), ("zh", "en")):
    texts, refs = [p[src] for p in pairs], [p[tgt] for p in pairs]
    best, outs = {}, {}
    for r in range(rounds):
        for name, arm in arms.items():
            with arm():
                s = time.perf_counter()
                outs[name] = translate(texts, models[name], tok, src_lang=src, tgt_lang=tgt, num_beams=1)
                best[name] = min(best.get(name, 1e9), time.perf_counter() - s)
    bleu = {k: round(sacrebleu.corpus_bleu(v, [refs], tokenize="zh" if tgt == "zh" else "13a").score, 2) for k, v in outs.items()}
    same = sum(a == b for a, b in zip(outs["screened"], outs["float32"]))
    same_b = sum(a == b for a, b in zip(outs["bf16 head"], outs["float32"]))
    print(f"{src}->{tgt}: seconds {({k: round(v, 2) for k, v in best.items()})}, screened x bf16 head "
          f"{best['bf16 head'] / best['screened']:.3f}; BLEU {bleu}; same as float32: screened {same}, bf16 head {same_b} of {len(texts)}", flush=True)
