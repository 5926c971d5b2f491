"""zhen.translate on real text with the zhen of PYTHONPATH: best-of-rounds seconds, BLEU, outputs (JSON to argv[5]).
argv: model, test, limit, beams, out.json [float32: force the float32 class]"""
import gzip, json, sys, time, contextlib
import sacrebleu, zhen
from zhen import ZhenForConditionalGeneration, translate, hardware
from transformers import AutoTokenizer
model_dir, test, limit, beams, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
arm = hardware.forced(cpu_bf16="emulated") if len(sys.argv) > 6 else contextlib.nullcontext()
pairs = [json.loads(l) for l in gzip.open(test, "rt")][:limit]
model = ZhenForConditionalGeneration.from_pretrained(model_dir).eval()
tok = AutoTokenizer.from_pretrained(model_dir)
result = {"zhen": zhen.__file__}
with arm:
    for src, tgt in (("en", "zh"), ("zh", "en")):
        texts, refs = [p[src] for p in pairs], [p[tgt] for p in pairs]
        best = 1e9
        for _ in range(3):
            s = time.perf_counter()
            outs = translate(texts, model, tok, src_lang=src, tgt_lang=tgt, num_beams=beams)
            best = min(best, time.perf_counter() - s)
        bleu = sacrebleu.corpus_bleu(outs, [refs], tokenize="zh" if tgt == "zh" else "13a").score
        result[f"{src}-{tgt}"] = dict(seconds=round(best, 3), bleu=round(bleu, 2), outputs=outs)
        print(f"{zhen.__file__} {src}->{tgt} beams {beams}: {best:.2f} s, BLEU {bleu:.2f}", flush=True)
json.dump(result, open(out, "w"), ensure_ascii=False)
