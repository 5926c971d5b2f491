"""zhen's int8 schemes on a CPU without VNNI against PyTorch's own, against float32: teacher-forced on float32's own
greedy outputs (relative logit error, top-1 agreement) and greedy translations identical to float32's.

    python benchmarks/results/2026-12-02-zen3-h/int8_schemes.py MODEL DATA [LIMIT]
"""
import copy, sys, warnings
warnings.simplefilter("ignore")
sys.path.insert(0, "benchmarks")
import torch
torch.set_num_threads(2)
from bleu_int8 import make_batches
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast, hardware
from zhen.data import load_parallel
from zhen.evaluation import parallel_columns
from zhen.fast_generation import FastDecoder
from zhen.quantization import narrow_weights, quantize_dynamic
from torch.ao.quantization import per_channel_dynamic_qconfig

model_dir, data = sys.argv[1], sys.argv[2]
limit = int(sys.argv[3]) if len(sys.argv) > 3 else 1000
model = ZhenForConditionalGeneration.from_pretrained(model_dir, dtype=torch.float32).eval()
tok = ZhenTokenizerFast.from_pretrained(model_dir)
cols = parallel_columns(load_parallel(data), limit)
mnt = lambda n: max(1, min(int(1.5 * n) + 10, 511))
print(hardware.current().describe() if hasattr(hardware.current(), "describe") else "", "int8_full_range", hardware.current().int8_full_range)
with hardware.forced(int8_full_range="off"):
    variants = {
        "zhen (layers a8/w7, head a7/w8)": quantize_dynamic(model),
        "a7/w8, a scale per row (zhen before)": torch.ao.quantization.quantize_dynamic(
            copy.deepcopy(model), {torch.nn.Linear: per_channel_dynamic_qconfig}, torch.qint8),
        "PyTorch's default (a7/w8, one scale)": torch.ao.quantization.quantize_dynamic(
            copy.deepcopy(model), {torch.nn.Linear}, torch.qint8),
        "all a8/w7": torch.ao.quantization.quantize_dynamic(
            copy.deepcopy(model), {torch.nn.Linear: narrow_weights(per_channel_dynamic_qconfig, True)}, torch.qint8),
    }
for m in variants["all a8/w7"].modules():  # PyTorch's module: 8-bit activations by its 7-bit weights
    if isinstance(m, torch.ao.nn.quantized.dynamic.Linear):
        m.version = 3  # zhen's session reads PyTorch's rule from the version: before 4, 8 bits
print({name: repr(q.lm_head).split("qscheme")[-1] for name, q in variants.items()})
texts = lambda outs: [t for o in outs for t in tok.batch_decode(o, skip_special_tokens=True)]
for src, tgt in (("en", "zh"), ("zh", "en")):
    rows, batches = make_batches(tok, cols[src], src, tgt, 64, 1, mnt)
    with FastDecoder(model, weights="auto") as d:
        outs = [d.generate(**b) for b in batches]
    ref_texts = texts(outs)
    for name, q in variants.items():
        agree = n = 0
        err = norm = 0.0
        with torch.inference_mode():
            for b, o in zip(batches, outs):
                inputs = dict(input_ids=b["input_ids"], attention_mask=b["attention_mask"], decoder_input_ids=o[:, :-1])
                keep = o[:, 1:] != tok.pad_token_id
                ref, lg = model(**inputs).logits[keep], q(**inputs).logits[keep]
                agree += int((lg.argmax(-1) == ref.argmax(-1)).sum()); n += len(ref)
                err += float(((lg - ref) ** 2).sum()); norm += float((ref ** 2).sum())
        with FastDecoder(q, weights="auto") as d:
            hyp = texts([d.generate(**b) for b in batches])
        same = sum(a == b for a, b in zip(hyp, ref_texts)) / len(hyp)
        print(f"{src}-{tgt} {name:38s} logit error {(err / norm) ** 0.5:.4f}  top-1 {100 * agree / n:.3f}%  "
              f"({n} tokens)  greedy identical {100 * same:.1f}%", flush=True)
