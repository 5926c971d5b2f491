"""What this folder's probes share: a bench_train system's step and batches, and a best-of timer. Run the probes from
the repository root."""
import sys
import timeit
import warnings

sys.path.insert(0, "benchmarks")
warnings.simplefilter("ignore")
import torch  # noqa: E402


def built(system: str, size: str = "tiny", count: int = 8, threads: int = 2):
    """`bench_train`'s step for `system` and `count` of its batches, on `threads` threads."""
    torch.set_num_threads(threads)
    from bench_train import build_step, make_batches

    return build_step(system, size, "fused", None), make_batches(size, 4096, count)


def best_ms(f, number: int = 10, repeat: int = 5) -> float:
    f()
    return min(timeit.repeat(f, number=number, repeat=repeat)) / number * 1e3
