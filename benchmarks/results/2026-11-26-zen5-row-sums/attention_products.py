"""Probe: decoding attention's two products over a cache, as batched matmuls and as FBGEMM weighted row sums
(`embedding_bag`), single-threaded, six layers' caches in turn (as a decoder step reads them, out of the CPU's caches
once they are large). Prints microseconds per layer.

    python benchmarks/results/2026-11-26-zen5-row-sums/attention_products.py
"""

import time

import torch
import torch.nn.functional as F


HEADS, HEAD_DIM, ALLOCATED, LAYERS = 8, 64, 40, 6


def per_layer_us(product, repeats: int = 30) -> float:
    product()
    product()
    start = time.perf_counter()
    for _ in range(repeats):
        product()
    return (time.perf_counter() - start) / repeats * 1e6 / LAYERS


def row_index(blocks: int, rows_per_block: int, k: int) -> torch.Tensor:
    return (torch.arange(blocks)[:, None] * rows_per_block + torch.arange(k)).view(blocks, k)


def measure(rows: int, length: int) -> dict:
    blocks = rows * HEADS
    values = [torch.randn(rows, HEADS, ALLOCATED, HEAD_DIM) for _ in range(LAYERS)]
    keys_by_dimension = [torch.randn(rows, HEADS, HEAD_DIM, length) for _ in range(LAYERS)]
    weights = torch.randn(rows, HEADS, 1, length).softmax(-1)
    query = torch.randn(rows, HEADS, 1, HEAD_DIM)
    value_rows, key_rows = row_index(blocks, ALLOCATED, length), row_index(blocks, HEAD_DIM, HEAD_DIM)

    def values_matmul():
        for v in values:
            torch.matmul(weights, v[:, :, :length])

    def values_row_sums():
        for v in values:
            table = v.view(-1, HEAD_DIM)
            F.embedding_bag(value_rows, table, mode="sum", per_sample_weights=weights.view(blocks, length))

    def keys_matmul():
        for k in keys_by_dimension:
            torch.matmul(query, k)

    def keys_row_sums():
        for k in keys_by_dimension:
            table = k.view(-1, length)
            F.embedding_bag(key_rows, table, mode="sum", per_sample_weights=query.view(blocks, HEAD_DIM))

    return {f.__name__: per_layer_us(f) for f in (values_matmul, values_row_sums, keys_matmul, keys_row_sums)}


def main():
    torch.set_num_threads(1)
    for rows, length in [(32, 17), (32, 33), (128, 17), (128, 33)]:
        timings = measure(rows, length)
        print(f"rows {rows:3d}, {length:2d} positions: " + ", ".join(f"{k} {v:.0f} us" for k, v in timings.items()))


if __name__ == "__main__":
    main()
