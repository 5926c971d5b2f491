# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""Is a step bound by the GPU's kernels or by launching them? For each system: wall milliseconds per step, GPU
kernel milliseconds per step (torch.profiler), kernels per step, and the top kernels by GPU time.

Systems (`--systems`): `train-zhen-bf16`, `train-marian-bf16` (one training step, as `bench_train.py` times it, on a
~`--max-tokens` batch), `decode-SYSTEM` for any system of `bench_generate.py` (`decode-zhen-fast-fp32`,
`decode-zhen-nographs-fp32`, `decode-marian-sdpa-bf16`, ...: greedy, 32 sentences, `--new-tokens` forced tokens, as
`bench_generate.py` times it; a step is one generated token). Needs a CUDA GPU.

    python benchmarks/gpu_busy.py --sizes base
"""

import json
import os
import sys
import time
import warnings

import torch
from torch.profiler import ProfilerActivity, profile


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import SIZES, benchmark_parser, source_batches, synthetic_pairs, to_device, token_batches  # noqa: E402


SYSTEMS = "train-zhen-bf16,train-marian-bf16,decode-zhen-fast-fp32,decode-zhen-nographs-fp32,decode-marian-sdpa-bf16"


def training_step(system: str, size: str, max_tokens: int):
    import bench_train

    batch = token_batches(synthetic_pairs(4000, SIZES[size]["vocab"]), max_tokens)[5]
    batch = to_device(batch, "cuda")
    family, precision = system.split("-")[1:]
    name = f"marian-sdpa-{precision}" if family == "marian" else f"zhen-prenorm-{precision}"
    step = bench_train.build_step(name, size, "fused", None, "cuda")
    return lambda: step(batch), int(batch["labels"].ne(-100).sum())


def decoding_run(system: str, size: str, new_tokens: int):
    import bench_generate

    generate = bench_generate.build_generator(system.removeprefix("decode-"), size, "prenorm", "/tmp", "cuda")
    batch = to_device(source_batches(32, 32, SIZES[size]["vocab"])[0], "cuda")
    return lambda: generate([batch], 1, new_tokens), new_tokens


def measure(run, steps: int) -> dict:
    for _ in range(3):
        run()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(3):
        run()
    torch.cuda.synchronize()
    wall = (time.perf_counter() - start) / 3
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        run()
        torch.cuda.synchronize()
    kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    gpu = sum(e.device_time for e in kernels) / 1e3  # microseconds -> ms
    top = {}
    for e in kernels:
        top[e.name[:60]] = top.get(e.name[:60], 0.0) + e.device_time / 1e3
    top = sorted(top.items(), key=lambda kv: -kv[1])[:6]
    return dict(
        wall_ms_per_step=1e3 * wall / steps, gpu_ms_per_step=gpu / steps, gpu_busy=gpu / (1e3 * wall),
        kernels_per_step=len(kernels) / steps, top_kernels_ms_per_step={k: round(v / steps, 3) for k, v in top},
    )  # fmt: skip


def main(argv=None):
    parser = benchmark_parser(__doc__, "cuda")
    parser.add_argument("--systems", default=SYSTEMS)
    parser.add_argument("--max-tokens", type=int, default=4096)
    parser.add_argument("--new-tokens", type=int, default=32)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    results = []
    for size in args.sizes.split(","):
        for system in args.systems.split(","):
            torch.manual_seed(0)
            if system.startswith("train"):
                run, steps = training_step(system, size, args.max_tokens)[0], 1
            else:
                run, steps = decoding_run(system, size, args.new_tokens)
                run = torch.inference_mode()(run)
            row = dict(size=size, system=system, **measure(run, steps))
            print(json.dumps(row), flush=True)
            results.append(row)
            torch.cuda.empty_cache()
    print(json.dumps(dict(benchmark="gpu_busy", gpu=torch.cuda.get_device_name(), results=results)))


if __name__ == "__main__":
    main()
