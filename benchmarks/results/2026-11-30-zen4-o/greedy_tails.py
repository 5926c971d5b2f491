"""How many of greedy search's steps run only a few rows: zhen's int8 session on 1,000 Tatoeba sentences (longest
first, in batches as bleu_int8.py makes them), the rows of each step counted, and the outputs that ran to the length
limit (1.5 x source + 10 tokens, bleu_int8.py's).

    python greedy_tails.py <small-cpu>/model en-zh 64
"""

import os
import sys
import warnings

import torch


warnings.simplefilter("ignore")
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", ".."))
torch.set_num_threads(1)
import zhen.fast_generation as fg  # noqa: E402
from bleu_int8 import translate_ids  # noqa: E402
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast  # noqa: E402
from zhen.data import load_parallel  # noqa: E402
from zhen.evaluation import parallel_columns  # noqa: E402
from zhen.quantization import quantize_dynamic  # noqa: E402


path, direction, batch_size = sys.argv[1], sys.argv[2], int(sys.argv[3])
src, tgt = direction.split("-")
model = quantize_dynamic(ZhenForConditionalGeneration.from_pretrained(path, dtype=torch.float32).eval())
tokenizer = ZhenTokenizerFast.from_pretrained(path)
texts = parallel_columns(load_parallel(os.path.join(here, "../../../../shared/data/tatoeba/valid.jsonl.gz")), 1000)[src]
rows = []
step = fg.DecoderSteps.step
fg.DecoderSteps.step = lambda self, tokens, position: rows.append(len(tokens)) or step(self, tokens, position)


def max_new_tokens(length):
    return max(1, min(int(1.5 * length) + 10, 512))


with torch.inference_mode(), fg.FastDecoder(model, weights="auto") as decoder:
    outputs = translate_ids(lambda batches: [decoder.generate(**b) for b in batches], tokenizer, texts, src, tgt,
                            batch_size, 1, max_new_tokens)  # fmt: skip
sources = [len(ids) for ids in tokenizer(texts)["input_ids"]]
lengths = [len(ids) for ids in tokenizer(outputs)["input_ids"]]
at_limit = sum(out >= max_new_tokens(source) for out, source in zip(lengths, sources))
print(f"{direction}, batches of {batch_size}: {len(rows)} steps, {sum(rows) / len(rows):.1f} rows a step on average; "
      f"{sum(r <= 4 for r in rows)} steps of at most 4 rows, {sum(r <= 8 for r in rows)} of at most 8; outputs "
      f"{sum(lengths) / len(lengths):.1f} tokens on average (longest {max(lengths)}), {at_limit} at the length limit")
