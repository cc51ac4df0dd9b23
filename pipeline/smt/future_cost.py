"""Future-score estimates (Koehn 2004; Moses): the best score to translate each uncovered span.

``span_table(best)``: from the best single-option future score of every span (static score + LM estimate),
F[i, j] = max(best[i, j], max_k F[i, k] + F[k+1, j]) by dynamic programming, vectorised over span starts and
split points. The estimate of a hypothesis is the sum of F over the maximal uncovered runs of its coverage
bitmask; ``FutureCosts`` caches it per coverage (many hypotheses share one).
"""
from __future__ import annotations

import numpy as np


def span_table(best: np.ndarray) -> np.ndarray:
    """[n, n] best score to cover span i..j (inclusive) with any sequence of options; -inf where impossible."""
    n = best.shape[0]
    # by_len[i, L]: best score of the span starting at i with length L (L = 1..n)
    by_len = np.full((n + 1, n + 1), -np.inf)
    for length in range(1, n + 1):
        starts = np.arange(n - length + 1)
        direct = best[starts, starts + length - 1]
        if length > 1:
            splits = np.arange(1, length)
            combined = by_len[starts[:, None], splits[None, :]] + by_len[starts[:, None] + splits[None, :],
                                                                         length - splits[None, :]]
            direct = np.maximum(direct, combined.max(axis=1))
        by_len[starts, length] = direct
    table = np.full((n, n), -np.inf)
    for i in range(n):
        table[i, i:] = by_len[i, 1:n - i + 1]
    return table


class FutureCosts:
    """Future score of coverage bitmasks of an n-word sentence, cached."""

    def __init__(self, table: np.ndarray) -> None:
        self.n = table.shape[0]
        self.table = table.tolist()
        self.cache: dict[int, float] = {}

    def __call__(self, coverage: int) -> float:
        value = self.cache.get(coverage)
        if value is None:
            value = self.cache[coverage] = self.compute(coverage)
        return value

    def compute(self, coverage: int) -> float:
        total, i, n, table = 0.0, 0, self.n, self.table
        while i < n:
            if coverage >> i & 1:
                i += 1
                continue
            j = i
            while j + 1 < n and not coverage >> (j + 1) & 1:
                j += 1
            total += table[i][j]
            i = j + 1
        return total
