import sys, time, torch, warnings, gzip, json
import probes
warnings.simplefilter("ignore")
import zhen, zhen.fast_generation as fg, zhen.translation as tr, zhen.layer_steps as ls
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast
torch.set_num_threads(2)
path = sys.argv[1]; beams = int(sys.argv[2]) if len(sys.argv) > 2 else 1
m = ZhenForConditionalGeneration.from_pretrained(path).eval()
tok = ZhenTokenizerFast.from_pretrained(path)
texts = [json.loads(l)["en"] for l, _ in zip(gzip.open("/work/shared/data/tatoeba/valid.jsonl.gz", "rt"), range(32))]
acc = {}
def timed(name, f):
    return probes.timed(acc, name, f)
probes.time_methods(acc, fg.FastDecoder, ["__enter__", "__exit__", "layer_steps", "encode", "generate"])
fg.DecoderSteps.__init__ = timed("DecoderSteps.init", fg.DecoderSteps.__init__)
fg.greedy_search = timed("greedy_search", fg.greedy_search)
fg.beam_search = timed("beam_search", fg.beam_search)
tr._encode_sources = timed("encode_sources", tr._encode_sources)
tok.batch_decode = timed("batch_decode", tok.batch_decode)
for t in texts[:4]: zhen.translate(t, m, tok, tgt_lang="zh", num_beams=beams)
for r in range(3):
    acc.clear()
    t0 = time.perf_counter()
    outs = [zhen.translate(t, m, tok, tgt_lang="zh", num_beams=beams) for t in texts]
    tot = (time.perf_counter() - t0) / len(texts) * 1000
    print("ms a call", round(tot, 2), {k: round(v / len(texts) * 1000, 2) for k, v in acc.items()})
