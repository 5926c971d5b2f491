"""What phases2.py, rowsums.py and profile_zh_en.py share: small-cpu, its int8 copy on one thread, 1,000 Tatoeba pairs
in batches of 64 sorted longest first, as bleu_int8.py makes them (run from the repository root)."""
import os
import sys

import torch

sys.path.insert(0, "benchmarks")
torch.set_num_threads(1)
from bleu_int8 import make_batches  # noqa: E402
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast  # noqa: E402
from zhen.data import load_parallel  # noqa: E402
from zhen.evaluation import parallel_columns  # noqa: E402
from zhen.quantization import quantize_dynamic  # noqa: E402

MODEL = os.environ.get("SMALL_CPU", "/tmp/s36/small-cpu/model")
model = ZhenForConditionalGeneration.from_pretrained(MODEL, dtype=torch.float32).eval()
tokenizer = ZhenTokenizerFast.from_pretrained(MODEL)
columns = parallel_columns(load_parallel("../shared/data/tatoeba/valid.jsonl.gz"), 1000)
quantized = quantize_dynamic(model)


def greedy_batches(direction: str, max_new_tokens: int | None = None) -> list[dict]:
    src, tgt = direction.split("-")
    budget = lambda n: max(1, min(int(1.5 * n) + 10, 512))  # noqa: E731
    _, batches = make_batches(tokenizer, columns[src], src, tgt, 64, 1, budget)
    for batch in batches:
        batch["num_beams"] = 1
        if max_new_tokens is not None:
            batch["max_new_tokens"] = max_new_tokens
    return batches
