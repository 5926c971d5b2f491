import sys, time, warnings
warnings.simplefilter("ignore")
sys.path.insert(0, "/work/main/benchmarks")
import torch
torch.set_num_threads(2)
from bleu_int8 import make_batches
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast
from zhen.data import load_parallel
from zhen.evaluation import parallel_columns
from zhen.fast_generation import FastDecoder
from zhen.quantization import quantize_dynamic, DynamicInt8Linear
M = sys.argv[1] if len(sys.argv) > 1 else "/tmp/s51/small-cpu/model"
data = sys.argv[2] if len(sys.argv) > 2 else "../shared/data/tatoeba/valid.jsonl.gz"
model = ZhenForConditionalGeneration.from_pretrained(M, dtype=torch.float32).eval()
tok = ZhenTokenizerFast.from_pretrained(M)
cols = parallel_columns(load_parallel(data), int(sys.argv[3]) if len(sys.argv) > 3 else 1000)
mnt = lambda n: max(1, min(int(1.5 * n) + 10, 511))
def weight_bits(q, bits, skip=()):
    floats = dict(model.named_modules())
    levels = 2 ** (bits - 1) - 1
    for name, m in q.named_modules():
        if isinstance(m, DynamicInt8Linear) and name not in skip:
            w = floats[name].weight.detach().float()
            b = floats[name].bias
            scale = (w.abs().amax(1) / levels).clamp_min(1e-12).double()
            qw = torch.quantize_per_channel(w, scale, torch.zeros(len(w), dtype=torch.long), 0, torch.qint8)
            m.set_weight_bias(qw, None if b is None else b.detach().float())
            m.reduce_range = False
    return q
variants = {
    "a7_w8 (now)": quantize_dynamic(model),
    "a8_w7": weight_bits(quantize_dynamic(model), 7),
    "a8_w7 layers, head now": weight_bits(quantize_dynamic(model), 7, skip=("lm_head",)),
}
for src, tgt in (("en", "zh"), ("zh", "en")):
    rows, batches = make_batches(tok, cols[src], src, tgt, 64, 1, mnt)
    texts = lambda outs: [t for o in outs for t in tok.batch_decode(o, skip_special_tokens=True)]
    with FastDecoder(model, weights="auto") as d:
        ref = texts([d.generate(**b) for b in batches])
    for name, q in variants.items():
        with FastDecoder(q, weights="auto") as d:
            outs = [d.generate(**b) for b in batches]
            t = time.perf_counter(); outs = [d.generate(**b) for b in batches]; dt = time.perf_counter() - t
        hyp = texts(outs)
        same = sum(a == b for a, b in zip(hyp, ref)) / len(ref)
        ntok = sum(int((o[:, 1:] != tok.pad_token_id).sum()) for o in outs)
        print(src, tgt, name, "same as float32 %.1f%%  tokens %d  %.2f s" % (100 * same, ntok, dt), flush=True)
