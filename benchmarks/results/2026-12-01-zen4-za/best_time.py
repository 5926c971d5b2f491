"""The probes' one timer: the best mean time of `calls` calls of `f` over `rounds` rounds, after `warmup` calls."""
import time


def best_seconds(f, calls=30, rounds=5, warmup=3):
    for _ in range(warmup):
        f()
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            f()
        best = min(best, (time.perf_counter() - start) / calls)
    return best
