# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""Translation speed on real sentences with a trained checkpoint, where outputs end on `</s>` at their own lengths.

`bench_generate.py` forces every system to the same number of new tokens, which measures the cost of a step. On real
text the sentences of a batch finish at different steps: `model.generate` (zhen's or Marian's) computes every row
until the batch's longest output ends; zhen's fast decoder drops finished rows (greedy) and finished sentences (beam
search). This script translates the same sentences, batch by batch, with

  generate-bf16     `model.generate` on the model cast to bf16 (SDPA): what Marian's best PyTorch configuration does
  generate-fp32     `model.generate` on the float32 model
  zhen-keep         `zhen.translate`'s default session (`FastDecoder`), finished rows kept (`DROP_FINISHED_SHARE=inf`)
  zhen              `zhen.translate`'s default session, finished rows dropped (the default)
  zhen-drop-X       the default session, dropping finished rows once they are a share X of those it runs

taking turns on every batch (best of `--rounds`), and prints sentences/s, generated tokens/s, the ratio to
generate-bf16, and the decoder rows computed per generated token. It checks that `zhen` and `zhen-keep` translate
identically.

    python benchmarks/bench_real_text.py --model runs/zhen/model --test ../shared/data/tatoeba/valid.jsonl.gz \\
        --limit 512 --num-beams 1,4 --threads 2
"""

import functools
import json
import math
import os
import sys
import time
import warnings

import torch


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import checkpoint_parser, cpu_description, print_table, synchronize  # noqa: E402


SYSTEMS = ("generate-bf16", "generate-fp32", "zhen-keep", "zhen")


def batches_of(tokenizer, texts: list[str], src: str, batch_size: int) -> list[dict]:
    """Sorted by length (as `zhen.translate` batches), padded."""
    tokenizer.src_lang = src
    ids = sorted(tokenizer(texts)["input_ids"], key=len)
    return [tokenizer.pad({"input_ids": ids[i : i + batch_size]}, return_tensors="pt")
            for i in range(0, len(ids), batch_size)]  # fmt: skip


def generated_tokens(out: torch.LongTensor, eos: int) -> int:
    """Tokens generated up to each row's first `</s>` (included): beam search pads with `</s>` itself."""
    ends = out[:, 1:] == eos
    lengths = torch.where(ends.any(1), ends.int().argmax(1) + 1, ends.shape[1])
    return int(lengths.sum())


def main(argv=None):
    parser = checkpoint_parser(__doc__, SYSTEMS, limit=512)
    parser.add_argument("--device", default="cpu", help="cpu, or cuda (zhen decodes there with CUDA graphs)")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    torch.set_num_threads(args.threads)
    from transformers.utils import logging

    logging.set_verbosity_error()
    from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast, decoder_steps, fast_generation, search
    from zhen.data import load_parallel
    from zhen.evaluation import parallel_columns

    def load(dtype):
        return ZhenForConditionalGeneration.from_pretrained(args.model, dtype=dtype).to(args.device).eval()

    model, model_fp32, model_bf16 = load(torch.float32), load(torch.float32), load(torch.bfloat16)
    tokenizer = ZhenTokenizerFast.from_pretrained(args.model)
    columns = parallel_columns(load_parallel(args.test), args.limit)
    rows_run = {"n": 0}

    def counting(step):
        def counting_step(self, tokens, position):
            rows_run["n"] += len(tokens)
            return step(self, tokens, position)

        return counting_step

    for steps_class in (decoder_steps.DecoderSteps, decoder_steps.StaticDecoderSteps):
        steps_class.step = counting(steps_class.step)
    session = fast_generation.FastDecoder(model).__enter__()  # held for the whole run, as zhen.translate holds it

    def zhen(batch, drop_share, **kwargs):
        search.DROP_FINISHED_SHARE = drop_share
        return session.generate(batch["input_ids"], batch["attention_mask"], **kwargs)

    def count_decoder_rows(module, args, kwargs):
        tokens = kwargs.get("input_ids", args[0] if args else None)
        rows_run["n"] += len(tokens)

    def with_generate(m):
        m.get_decoder().register_forward_pre_hook(count_decoder_rows, with_kwargs=True)
        return lambda batch, **kwargs: m.generate(**batch, **kwargs)

    default_share = search.DROP_FINISHED_SHARE
    systems = {
        "generate-bf16": with_generate(model_bf16),
        "generate-fp32": with_generate(model_fp32),
        "zhen-keep": lambda b, **k: zhen(b, math.inf, **k),
        "zhen": lambda b, **k: zhen(b, default_share, **k),
    }
    names = [s for s in args.systems.split(",") if s]
    for name in names:
        if name.startswith("zhen-drop-"):
            systems[name] = functools.partial(zhen, drop_share=float(name.removeprefix("zhen-drop-")))
        elif name not in systems:
            parser.error(f"unknown system {name!r}; known: {', '.join(SYSTEMS)}, zhen-drop-X")
    results = []
    for num_beams in map(int, args.num_beams.split(",")):
        for direction in args.directions.split(","):
            src, tgt = direction.split("-")
            batches = [batch.to(args.device) for batch in batches_of(tokenizer, columns[src], src, args.batch_size)]
            best = {name: [math.inf] * len(batches) for name in names}
            rows = {name: 0 for name in names}
            outputs = {name: [None] * len(batches) for name in names}
            for turn in range(args.rounds):
                for i, batch in enumerate(batches):
                    kwargs = dict(forced_bos_token_id=tokenizer.get_lang_id(tgt), num_beams=num_beams,
                                  max_new_tokens=min(int(1.5 * batch["input_ids"].shape[1]) + 10, 256))  # fmt: skip
                    shift = (turn + i) % len(names)
                    for name in names[shift:] + names[:shift]:
                        rows_run["n"] = 0
                        synchronize(args.device)
                        start = time.perf_counter()
                        with torch.inference_mode():
                            out = systems[name](batch, **kwargs)
                        synchronize(args.device)
                        best[name][i] = min(best[name][i], time.perf_counter() - start)
                        rows[name] += rows_run["n"] if turn == 0 else 0
                        outputs[name][i] = out
            for name in names:
                texts = [t for out in outputs[name] for t in tokenizer.batch_decode(out, skip_special_tokens=True)]
                tokens = sum(generated_tokens(out, model.config.eos_token_id) for out in outputs[name])
                seconds = sum(best[name])
                results.append(dict(direction=direction, beams=num_beams, system=name, sentences=len(texts),
                                    seconds=seconds, sent_s=len(texts) / seconds, tok_s=tokens / seconds,
                                    rows_per_token=rows[name] / tokens if rows[name] else None,
                                    texts=texts))  # fmt: skip
            by_name = {r["system"]: r for r in results[-len(names) :]}
            if "zhen" in by_name and "zhen-keep" in by_name:
                assert by_name["zhen"]["texts"] == by_name["zhen-keep"]["texts"], "dropping rows changed a translation"
            peer = by_name.get("generate-bf16")
            for r in by_name.values():
                r["x_generate_bf16"] = r["sent_s"] / peer["sent_s"] if peer else None
    session.__exit__(None, None, None)
    for r in results:
        r.pop("texts")
    print(f"# {args.model} on {args.test}: {args.limit} sentences, batch {args.batch_size}, {args.threads} threads, "
          f"best of {args.rounds}; {json.dumps(cpu_description())}")  # fmt: skip
    print_table(
        results,
        [("direction", "direction", "s"), ("beams", "beams", "d"), ("system", "system", "s"),
         ("sent_s", "sent/s", ".1f"), ("tok_s", "tok/s", ".0f"), ("x_generate_bf16", "× generate bf16", ".2f"),
         ("rows_per_token", "decoder rows / token", ".2f")],
    )  # fmt: skip
    print(json.dumps(dict(benchmark="real_text", results=results)))


if __name__ == "__main__":
    main()
