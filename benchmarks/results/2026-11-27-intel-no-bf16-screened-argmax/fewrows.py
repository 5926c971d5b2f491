"""One text a call: zhen.translate with few-row products through MKL (now) against every product through oneDNN's
packing (FEW_ROW_MACS = 0, before), taking turns; Marian-style generate on the same model for reference."""
import sys, time, torch, warnings, gzip, json
warnings.simplefilter("ignore")
import transformers; transformers.logging.set_verbosity_error()
import zhen
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast, layer_steps
torch.set_num_threads(2)
path, beams = sys.argv[1], int(sys.argv[2])
m = ZhenForConditionalGeneration.from_pretrained(path).eval()
tok = ZhenTokenizerFast.from_pretrained(path)
rows = [json.loads(l) for l, _ in zip(gzip.open("/work/shared/data/tatoeba/valid.jsonl.gz", "rt"), range(32))]
DEFAULT = layer_steps.FEW_ROW_MACS
def per_call(src, tgt, macs):
    layer_steps.FEW_ROW_MACS = macs
    texts = [r[src] for r in rows]
    for t in texts[:3]: zhen.translate(t, m, tok, tgt_lang=tgt, num_beams=beams)
    t0 = time.perf_counter(); out = [zhen.translate(t, m, tok, tgt_lang=tgt, num_beams=beams) for t in texts]
    return (time.perf_counter() - t0) / len(texts) * 1000, out
for src, tgt in (("en", "zh"), ("zh", "en")):
    best = {0: 1e9, DEFAULT: 1e9}; outs = {}
    for r in range(3):
        for macs in (0, DEFAULT):
            ms, outs[macs] = per_call(src, tgt, macs); best[macs] = min(best[macs], ms)
    print(f"{path.rstrip('/').split('/')[-1]} {src}->{tgt} beams {beams}: every product oneDNN {best[0]:.1f} ms a call, few rows MKL {best[DEFAULT]:.1f} ({best[0]/best[DEFAULT]:.2f}x); same: {outs[0] == outs[DEFAULT]}")
