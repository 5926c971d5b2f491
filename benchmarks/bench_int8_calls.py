# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""What an int8 model's decoding steps cost with its products called from Python as zhen calls them
(`zhen.hardware.packed_product`: without asking the packed weight, a `torch.ScriptObject`, for a tensor subclass's
`__torch_function__`, which it answers by throwing a C++ exception) against the plain call, in one process, the two
taking turns. Microseconds a call of one product (`product`: the first decoder layer's attention output projection,
a quantized module's forward, `--calls` calls); milliseconds a step, greedy search forced to `--steps` tokens, one
thread, at each of `--rows`, for:

- `interpreted`: a decoding session's layers' program run by Python (a session's first second, before TorchScript
  compiles it, or where it cannot), every product called from Python;
- `compiled`: the program compiled by TorchScript, only the LM head called from Python;
- `generate`: Transformers' `model.generate` of the quantized model, every product called from Python.

    python benchmarks/bench_int8_calls.py --model checkpoints/zhen-small --rows 1,8,32 --rounds 5
    python benchmarks/bench_int8_calls.py --size tiny   # random weights, d_model 256
"""

import argparse
import json
import statistics
import sys
import time
import warnings
from pathlib import Path

import torch


sys.path.insert(0, str(Path(__file__).parent))
from common import EN, EOS, ZH, cpu_description, machine_info, print_table, zhen_model  # noqa: E402

from zhen import hardware  # noqa: E402
from zhen.fast_generation import FastDecoder  # noqa: E402
from zhen.quantization import quantize_dynamic  # noqa: E402


PATHS = ("product", "interpreted", "compiled", "generate")
FIRST_WORD = ZH + 1  # ids below are special tokens and language codes


def plain_call(op, *args):
    return op(*args)


def load(args):
    if args.model:
        from zhen import ZhenForConditionalGeneration

        model = ZhenForConditionalGeneration.from_pretrained(args.model, dtype=torch.float32)
    else:
        model = zhen_model(args.size)
    return quantize_dynamic(model.eval())


def product_us(model, rows: int, calls: int) -> float:
    product = model.get_decoder().layers[0].self_attn.out_proj  # in a session, its `Int8Linear`
    x = torch.randn(rows, model.config.d_model)
    start = time.perf_counter()
    for _ in range(calls):
        product(x)
    return (time.perf_counter() - start) / calls * 1e6


def step_ms(model, batch: dict, path: str, steps: int, session: FastDecoder | None) -> float:
    options = dict(num_beams=1, max_new_tokens=steps, min_new_tokens=steps)
    start = time.perf_counter()
    if path == "generate":
        model.generate(**batch, **options)
    else:
        session.generate(**batch, **options)
    return (time.perf_counter() - start) / steps * 1e3


def timed(model, rows: int, batch: dict, path: str, session: FastDecoder, args) -> float:
    if path == "product":
        return product_us(model, rows, args.calls)
    return step_ms(model, batch, path, args.steps, session)


def measure(model, rows: int, args) -> list[dict]:
    generator = torch.Generator().manual_seed(rows)
    input_ids = torch.randint(FIRST_WORD, model.config.vocab_size, (rows, args.source_length), generator=generator)
    input_ids[:, 0], input_ids[:, -1] = EN, EOS
    batch = dict(input_ids=input_ids, attention_mask=torch.ones_like(input_ids))
    calls = {"zhen": hardware.packed_product, "plain": plain_call}
    out = []
    for path in PATHS:
        times = {name: [] for name in calls}

        with torch.inference_mode(), FastDecoder(model, script_layers=path == "compiled") as session:
            for name in calls:  # warm: the session's weights, TorchScript's compilation
                hardware.packed_product = calls[name]
                timed(model, rows, batch, path, session, args)
            for turn in range(args.rounds):
                for name in calls if turn % 2 == 0 else reversed(calls):
                    hardware.packed_product = calls[name]
                    times[name].append(timed(model, rows, batch, path, session, args))
        hardware.packed_product = calls["zhen"]
        zhen, plain = statistics.median(times["zhen"]), statistics.median(times["plain"])
        unit = "us a call" if path == "product" else "ms a step"
        out.append(dict(rows=rows, path=path, unit=unit, zhen=round(zhen, 3), plain=round(plain, 3),
                        speedup=round(plain / zhen, 2)))  # fmt: skip
        print(json.dumps(out[-1]), flush=True)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--model", help="a zhen checkpoint (quantized here)")
    source.add_argument("--size", default="tiny", help="random weights of a benchmark size (tiny, base)")
    parser.add_argument("--rows", default="1,8,32", help="sentences decoded at once")
    parser.add_argument("--steps", type=int, default=40, help="tokens each sentence generates")
    parser.add_argument("--source-length", type=int, default=20, help="tokens of each (random) source sentence")
    parser.add_argument("--rounds", type=int, default=9, help="turns each call takes; medians reported")
    parser.add_argument("--calls", type=int, default=2000, help="calls of the product a turn")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")  # PyTorch announces quantized tensors' move to torchao
    torch.set_num_threads(args.threads)
    print(json.dumps({**cpu_description(), **machine_info()}), flush=True)
    model = load(args)
    results = [row for rows in args.rows.split(",") for row in measure(model, int(rows), args)]
    print_table(
        results,
        [("rows", "rows", "d"), ("path", "path", "s"), ("unit", "unit", "s"), ("zhen", "zhen", ".3f"),
         ("plain", "plain call", ".3f"), ("speedup", "plain / zhen (x)", ".2f")],
    )  # fmt: skip


if __name__ == "__main__":
    main()
