"""zhen.translate one text a call on a CPU with native bf16: the default bf16 session, the bf16 session drafted by the
int8 copy, and a float32 session drafted, alternated in one process (each on its own copy of the model, so that each
keeps its session copies). Usage: bf16_drafts_ab.py CHECKPOINT NUM_BEAMS [TEXTS] [ROUNDS]"""

import sys
import time

sys.path.insert(0, "/work/main/benchmarks/results/2026-11-27-intel-session-reuse-mkl-packing")
import zhen  # noqa: E402
from probes import checkpoint_and_pairs, each_way  # noqa: E402
from zhen import draft_decoding  # noqa: E402
from zhen.fast_generation import FastDecoder  # noqa: E402

draft_decoding.DRAFT_AFTER = 0  # steady state: the draft from the first drafted call on
num_beams = int(sys.argv[2])
count, rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 16, int(sys.argv[4]) if len(sys.argv) > 4 else 3
defaults = FastDecoder.__init__.__defaults__  # weights, cuda_graphs, inline_layers, script_layers, keep_copies, ..., drafts
variants = {
    "bf16": ("auto", *defaults[1:6], False),
    "bf16 drafted": ("auto", *defaults[1:6], True),
    "float32 drafted": ("packed", *defaults[1:6], True),
}
models = {name: checkpoint_and_pairs(sys.argv[1]) for name in variants}
for direction_index, direction in enumerate(("en->zh", "zh->en")):
    results, outputs = {}, {}
    for name, values in variants.items():  # warm each variant's session copies and draft
        FastDecoder.__init__.__defaults__ = values
        model, tokenizer, rows = models[name]
        ways = list(each_way(model, tokenizer, rows, count, num_beams=num_beams))
        models[name] = (model, tokenizer, rows, ways[direction_index])
    for _ in range(rounds):
        for name, values in variants.items():
            FastDecoder.__init__.__defaults__ = values
            _, texts, options = models[name][3]
            start = time.perf_counter()
            outputs[name] = [zhen.translate(text, **options) for text in texts]
            results.setdefault(name, []).append(round((time.perf_counter() - start) / len(texts) * 1000, 1))
    for name in variants:
        models[name] = models[name][:3]
    base = min(results["bf16"])
    print(f"{direction} beam {num_beams}, ms a call:", results)
    for name in variants:
        same = sum(a == b for a, b in zip(outputs[name], outputs["bf16"]))
        print(f"  {name}: best {min(results[name])} ms, {base / min(results[name]):.2f}x bf16; "
              f"{same}/{len(outputs[name])} translations as the bf16 session's")
FastDecoder.__init__.__defaults__ = defaults
