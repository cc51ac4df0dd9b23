import itertools

import numpy as np
import pytest

from pipeline.smt.future_cost import FutureCosts, span_table


def brute(best: np.ndarray, i: int, j: int) -> float:
    """Best score of covering i..j by any sequence of spans (every split into consecutive pieces)."""
    length = j - i + 1
    result = -np.inf
    for cuts in itertools.product([0, 1], repeat=length - 1):
        bounds = [i] + [i + k + 1 for k, c in enumerate(cuts) if c] + [j + 1]
        result = max(result, sum(best[a, b - 1] for a, b in zip(bounds, bounds[1:])))
    return result


def test_span_table_is_the_best_segmentation():
    rng = np.random.default_rng(0)
    n = 7
    best = np.full((n, n), -np.inf)
    for i in range(n):
        for j in range(i, min(n, i + 3)):
            if j == i or rng.random() < 0.6:
                best[i, j] = -rng.uniform(0.5, 5) * (j - i + 1) ** 0.8
    table = span_table(best)
    for i in range(n):
        for j in range(i, n):
            assert table[i, j] == pytest.approx(brute(best, i, j))


def test_coverage_estimates_sum_the_uncovered_runs():
    best = np.full((5, 5), -np.inf)
    np.fill_diagonal(best, [-1.0, -2.0, -3.0, -4.0, -5.0])
    best[1, 2] = -4.0  # cheaper than -2 + -3
    future = FutureCosts(span_table(best))
    assert future(0) == pytest.approx(-14.0)
    assert future(0b11111) == 0.0
    assert future(0b01001) == pytest.approx(-4.0 + -5.0 + 0.0) == future.compute(0b01001)  # runs 1..2 and 4
    assert future(0b10001) == pytest.approx(-4.0 + -4.0)
    assert 0b01001 in future.cache
