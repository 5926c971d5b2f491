"""The int8 draft's drafted tokens the float32 model keeps (one text a call, greedy, `drafts=True`), with the draft
quantized as zhen does now without VNNI (layers 8-bit activations by 7-bit weights) and as before (7 by 8), taking
turns on the same texts.

    python benchmarks/results/2026-12-02-zen3-h/draft_acceptance.py MODEL DATA en zh [TEXTS]
"""
import copy, sys, time, warnings
warnings.simplefilter("ignore")
import torch
torch.set_num_threads(2)
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast, draft_decoding, quantization
from zhen.data import load_parallel
from zhen.evaluation import parallel_columns
from zhen.fast_generation import FastDecoder

model = ZhenForConditionalGeneration.from_pretrained(sys.argv[1], dtype=torch.float32).eval()
tok = ZhenTokenizerFast.from_pretrained(sys.argv[1])
src, tgt = sys.argv[3], sys.argv[4]
count = int(sys.argv[5]) if len(sys.argv) > 5 else 200
texts = parallel_columns(load_parallel(sys.argv[2]), count)[src]
tok.src_lang, tok.tgt_lang = src, tgt
inputs = [tok(t, return_tensors="pt") for t in texts]
kwargs = dict(forced_bos_token_id=tok.get_lang_id(tgt), num_beams=1, max_new_tokens=64)
tally = {}
update = draft_decoding.DraftLength.update


def counting(scheme):
    def counted(self, drafted, kept):
        tally[scheme][0] += drafted
        tally[scheme][1] += kept
        return update(self, drafted, kept)
    return counted


narrow = quantization.narrow_weights
schemes = {"now (8 x 7)": narrow, "before (7 x 8)": lambda qconfig, per_channel: qconfig}
models = {name: copy.deepcopy(model) for name in schemes}
outputs, seconds = {}, dict.fromkeys(schemes, 0.0)
with torch.inference_mode():
    for turn in range(2):
        for name, make in (schemes.items() if turn % 2 else list(schemes.items())[::-1]):
            quantization.narrow_weights = make  # the draft is quantized at its session's first drafted call
            draft_decoding.DraftLength.update = counting(name)
            tally[name] = [0, 0]
            with FastDecoder(models[name], drafts=True) as decoder:
                start = time.perf_counter()
                outputs[name] = [decoder.generate(x["input_ids"], x["attention_mask"], **kwargs) for x in inputs]
                seconds[name] = time.perf_counter() - start
quantization.narrow_weights, draft_decoding.DraftLength.update = narrow, update
plain = FastDecoder(model, drafts=False).__enter__()
with torch.inference_mode():
    reference = [plain.generate(x["input_ids"], x["attention_mask"], **kwargs) for x in inputs]
for name, (drafted, kept) in tally.items():
    same = all(torch.equal(a, b) for a, b in zip(outputs[name], reference))
    print(f"{src}-{tgt} {name:15s} kept {kept} of {drafted} drafted tokens ({100 * kept / drafted:.1f} %), "
          f"{len(texts) / seconds[name]:.1f} texts/s (second turn), outputs the model's own: {same}")
