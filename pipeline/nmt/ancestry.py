"""Attention over caches that beam reorders never copy: each row reads its self-attention keys and values through
its ancestors, and its source's through its sentence (a CPU decoding speed-up of the Transformer,
CpuSpeedups.ancestry_cache).

In incremental decoding, every beam reorder gives each new row the self-attention cache of its parent row. Copying
those caches (t entries per row, two per layer) is as much memory traffic as the attention itself. Here the keys
and values of step t are written once, for the rows of step t, into a cache shared by all rows:

    cache [2, T, C, heads, d]    cache[0, t, j] the keys and cache[1, t, j] the values of row j of step t
    ancestry [R, T] int64        ancestry[r, t] the row of step t that row r descends from (row r itself at t)

A reorder selects rows of `ancestry` (T integers per row) and leaves the cache alone; step t's query of row r
attends over cache[:, u, ancestry[r, u]] for u <= t. The source side is kept once per sentence the same way: the
cross-attention keys and values [N, S, heads, d] and the source lengths [N] are shared, and each row holds its
sentence's index (`sentence` [R]), so neither beam expansion nor the end of a sentence copies them.

The results are those of attention over copied caches, rounded differently (the kernels sum in another order than
scaled_dot_product_attention): within 1e-5 on unit inputs (tests/pipeline/nmt/test_ancestry.py). The kernels run
on one thread: numba's parallel loops start its OpenMP threading layer, and once that runs, torch's small
operations in the same process take about 5x longer on the 2-core machines of docs/benchmarks.md (a layer norm of
64 x 256: 16 -> 90 microseconds).
"""
from __future__ import annotations

import numpy as np
import torch
from numba import njit
from torch import Tensor

__all__ = ["attend_ancestry", "attend_sources", "cache_room", "empty_cache"]


FASTMATH = {"reassoc", "contract", "nsz", "arcp"}


@njit(fastmath=FASTMATH, cache=True)
def _softmax_rows(logits: np.ndarray, length: int) -> None:
    """logits [heads, L] (float32) -> the softmax of each row's first `length` entries, in place."""
    for h in range(logits.shape[0]):
        top = logits[h, 0]
        for u in range(1, length):
            top = max(top, logits[h, u])
        total = np.float32(0.0)
        for u in range(length):
            logits[h, u] = np.exp(logits[h, u] - top)
            total += logits[h, u]
        inverse = np.float32(1.0) / total
        for u in range(length):
            logits[h, u] *= inverse


@njit(fastmath=FASTMATH, cache=True)
def _attend(query: np.ndarray, cache: np.ndarray, ancestry: np.ndarray, length: int, scale: float,
            out: np.ndarray) -> None:
    """out[r, h] = softmax_u(scale * query[r, h] . keys[u, r, h]) . values[u, r, h] over u < length, where
    keys/values[u, r] = cache[0/1, u, ancestry[r, u]]. A row's ancestor of step u is looked up once for all its
    heads, whose keys and values lie side by side, and one buffer holds every row's logits in turn."""
    rows, heads, size = query.shape
    logits = np.empty((heads, length), dtype=np.float32)
    for r in range(rows):
        for u in range(length):
            j = ancestry[r, u]
            for h in range(heads):
                dot = np.float32(0.0)
                for d in range(size):
                    dot += query[r, h, d] * cache[0, u, j, h, d]
                logits[h, u] = dot * scale
        _softmax_rows(logits, length)
        out[r] = 0.0
        for u in range(length):
            j = ancestry[r, u]
            for h in range(heads):
                weight = logits[h, u]
                for d in range(size):
                    out[r, h, d] += weight * cache[1, u, j, h, d]


@njit(fastmath=FASTMATH, cache=True)
def _attend_sources(query: np.ndarray, keys: np.ndarray, values: np.ndarray, sentence: np.ndarray,
                    lengths: np.ndarray, scale: float, out: np.ndarray) -> None:
    """out[r, h] = softmax_s(scale * query[r, h] . keys[n, s, h]) . values[n, s, h] over s < lengths[n], with
    n = sentence[r]."""
    rows, heads, size = query.shape
    logits = np.empty((heads, keys.shape[1]), dtype=np.float32)
    for r in range(rows):
        n = sentence[r]
        length = lengths[n]
        for u in range(length):
            for h in range(heads):
                dot = np.float32(0.0)
                for d in range(size):
                    dot += query[r, h, d] * keys[n, u, h, d]
                logits[h, u] = dot * scale
        _softmax_rows(logits, length)
        out[r] = 0.0
        for u in range(length):
            for h in range(heads):
                weight = logits[h, u]
                for d in range(size):
                    out[r, h, d] += weight * values[n, u, h, d]


def attend_sources(query: Tensor, keys: Tensor, values: Tensor, sentence: Tensor, lengths: Tensor) -> Tensor:
    """Single-query cross-attention of rows over their sentence's source, kept once per sentence: query
    [R, heads, d] (float32, CPU), keys and values [N, S, heads, d], sentence [R] (each row's sentence), lengths [N]
    -> [R, heads, d]; scale 1/sqrt(d)."""
    out = torch.empty_like(query)
    _attend_sources(query.contiguous().numpy(), keys.numpy(), values.numpy(), sentence.numpy(), lengths.numpy(),
                    np.float32(query.shape[-1] ** -0.5), out.numpy())
    return out


def attend_ancestry(query: Tensor, cache: Tensor, ancestry: Tensor, length: int) -> Tensor:
    """Single-query attention of rows through their ancestry: query [R, heads, d] (float32, CPU), cache
    [2, T, C, heads, d], ancestry [R, T] -> [R, heads, d] over the first `length` steps; scale 1/sqrt(d)."""
    out = torch.empty_like(query)
    _attend(query.contiguous().numpy(), cache.numpy(), ancestry.numpy(), length, np.float32(query.shape[-1] ** -0.5),
            out.numpy())
    return out


def empty_cache(rows: int, heads: int, size: int, dtype: torch.dtype = torch.float32,
                steps: int = 16) -> tuple[Tensor, Tensor]:
    """A cache [2, steps, rows, heads, size] and an ancestry [rows, steps] for `rows` rows at step 0 (capacities
    double as they grow in cache_room, so a step rarely copies)."""
    return (torch.empty(2, steps, rows, heads, size, dtype=dtype),
            torch.zeros(rows, steps, dtype=torch.int64))


def cache_room(cache: Tensor, ancestry: Tensor, step: int, rows: int) -> tuple[Tensor, Tensor]:
    """The cache and ancestry with room for step `step` of `rows` rows (grown copies when they lack it)."""
    _, steps, capacity, heads, size = cache.shape
    if step >= steps or rows > capacity:
        grown = cache.new_empty(2, max(steps, 2 * step if step >= steps else steps),
                                max(capacity, rows), heads, size)
        grown[:, :steps, :capacity] = cache
        cache = grown
    if step >= ancestry.shape[1]:
        grown_ancestry = ancestry.new_zeros(ancestry.shape[0], cache.shape[1])
        grown_ancestry[:, :ancestry.shape[1]] = ancestry
        ancestry = grown_ancestry
    return cache, ancestry
