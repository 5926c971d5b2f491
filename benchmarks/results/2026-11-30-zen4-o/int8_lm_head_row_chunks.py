"""Would an int8 LM head run faster in chunks of rows? FBGEMM's dynamic int8 product quantizes its input with one
scale for the whole batch, so chunks must share it: `quantized.linear_with_input_q_dq_qweight_dq_output_fp32` takes
the batch's scale and zero point (`torch._choose_qparams_per_tensor`, what `linear_dynamic` computes) and gives the
same numbers bit for bit (asserted). Greedy search needs only each row's argmax, so each chunk is reduced at once.
One thread; the variants alternate over 15 rounds of 10 calls; medians in µs.

    python int8_lm_head_row_chunks.py 16000 256 16,24,32,48,64,128 [kept]   # the small-cpu LM head
    python int8_lm_head_row_chunks.py 32000 512 16,32,64             # base's
"""

import os
import statistics
import sys
import time
import warnings

import torch


warnings.simplefilter("ignore")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
from zhen import hardware  # noqa: E402
from zhen.fast_generation import argmax  # noqa: E402


torch.set_num_threads(1)
kept = len(sys.argv) > 4 and sys.argv[4] == "kept"
if kept:  # what a decoding session does: glibc keeps freed blocks (no fresh pages for each call's output)
    assert hardware.keep_freed_memory()
vocab, width = int(sys.argv[1]), int(sys.argv[2])
linear = torch.nn.Linear(width, vocab)
with torch.no_grad():
    linear.weight.normal_(0, 0.05), linear.bias.normal_()
packed = torch.ao.quantization.quantize_dynamic(torch.nn.Sequential(linear), {torch.nn.Linear}, dtype=torch.qint8)[0]
packed = packed._packed_params._packed_params
dynamic = torch.ops.quantized.linear_dynamic
given_scale = torch.ops.quantized.linear_with_input_q_dq_qweight_dq_output_fp32


def timeit(function, calls=10):
    start = time.perf_counter()
    for _ in range(calls):
        function()
    return (time.perf_counter() - start) / calls * 1e6


print(f"# {vocab} x {width} int8 LM head, greedy: product + argmax, one thread, freed memory kept: {kept}")
with torch.inference_mode():
    for rows in map(int, sys.argv[3].split(",")):
        x = torch.randn(rows, width) * 3
        variants = {"whole": lambda: argmax(dynamic(x, packed, reduce_range=False))}
        for chunk in (8, 16, 24):
            def chunked(chunk=chunk):
                scale, zero_point = torch._choose_qparams_per_tensor(x, False)
                parts = [argmax(given_scale(x[i : i + chunk], scale, zero_point, packed)) for i in range(0, rows, chunk)]
                return torch.cat(parts)

            variants[f"{chunk} rows"] = chunked
        assert all(torch.equal(variants["whole"](), v()) for v in variants.values())
        times = {name: [] for name in variants}
        for _ in range(15):
            for name, variant in variants.items():
                times[name].append(timeit(variant))
        median = {name: statistics.median(t) for name, t in times.items()}
        ratios = " ".join(f"{name} {median['whole'] / m:.2f}x" for name, m in median.items() if name != "whole")
        print(f"{rows} rows: whole {median['whole']:.0f} us; chunks of {ratios}", flush=True)
