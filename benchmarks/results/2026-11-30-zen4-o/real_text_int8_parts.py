"""Where an int8 translation of real text spends its time at the `small-cpu` width, on one thread: zhen's int8
session (the encoder, the decoder's steps, the LM head, the search's bookkeeping) against CTranslate2's int8 whole and
with one new token (its encoder, about). 1,000 Tatoeba sentences in batches of 32, longest first, as bleu_int8.py.

    python real_text_int8_parts.py <small-cpu>/model en-zh 1|4
"""

import collections
import os
import sys
import tempfile
import time
import warnings

import torch


warnings.simplefilter("ignore")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
torch.set_num_threads(1)
import zhen.fast_generation as fg  # noqa: E402
from bleu_int8 import translate_ids  # noqa: E402
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast  # noqa: E402
from zhen.convert_ctranslate2 import CTranslate2Generator, convert  # noqa: E402
from zhen.data import load_parallel  # noqa: E402
from zhen.evaluation import parallel_columns  # noqa: E402
from zhen.quantization import quantize_dynamic  # noqa: E402


path, direction, beams = sys.argv[1], sys.argv[2], int(sys.argv[3])
src, tgt = direction.split("-")
model = ZhenForConditionalGeneration.from_pretrained(path, dtype=torch.float32).eval()
tokenizer = ZhenTokenizerFast.from_pretrained(path)
here = os.path.dirname(os.path.abspath(__file__))
texts = parallel_columns(load_parallel(os.path.join(here, "../../../../shared/data/tatoeba/valid.jsonl.gz")), 1000)[src]
quantized = quantize_dynamic(model)
seconds, calls, rows = collections.Counter(), collections.Counter(), []


def timed(function, name):
    def run(*args, **kwargs):
        start = time.perf_counter()
        result = function(*args, **kwargs)
        seconds[name] += time.perf_counter() - start
        calls[name] += 1
        return result

    return run


for owner, name in [(fg.FastDecoder, "encode"), (fg.FastDecoder, "decoder_steps"), (fg.DecoderSteps, "step"),
                    (fg.DecoderSteps, "run_layer_steps"), (fg.DecoderSteps, "logits"),
                    (fg.DecoderSteps, "next_tokens"), (fg.BeamSearch, "choose")]:  # fmt: skip
    setattr(owner, name, timed(getattr(owner, name), name))
fg.beam_log_probs = timed(fg.beam_log_probs, "beam_log_probs")
steps_of = fg.DecoderSteps.step
fg.DecoderSteps.step = lambda self, tokens, position: rows.append(len(tokens)) or steps_of(self, tokens, position)


def max_new_tokens(length):
    return max(1, min(int(1.5 * length) + 10, 512))


print(f"# {path}, {direction}, beam {beams}, 1 thread, 1,000 Tatoeba sentences in batches of 32")
for round_ in range(3):
    seconds.clear(), calls.clear(), rows.clear()
    start = time.perf_counter()
    with torch.inference_mode(), fg.FastDecoder(quantized, weights="auto") as decoder:
        translate_ids(lambda batches: [decoder.generate(**b) for b in batches], tokenizer, texts, src, tgt, 32, beams,
                      max_new_tokens)  # fmt: skip
    total = time.perf_counter() - start
    parts = " ".join(f"{name} {s:.3f} s/{calls[name]}" for name, s in seconds.items())
    print(f"zhen int8: {total:.3f} s; {parts}; rows a step {sum(rows) / len(rows):.1f}", flush=True)
with tempfile.TemporaryDirectory() as tmp:
    generator = CTranslate2Generator(convert(path, tmp, quantization="int8"), compute_type="int8", intra_threads=1)
    for limit in (None, 1):
        for round_ in range(3):
            start = time.perf_counter()
            translate_ids(lambda batches: [generator.generate(**b) for b in batches], tokenizer, texts, src, tgt, 32,
                          beams, (lambda length: 1) if limit else max_new_tokens)  # fmt: skip
            print(f"CTranslate2 int8, {'1 new token' if limit else 'whole'}: {time.perf_counter() - start:.3f} s",
                  flush=True)
