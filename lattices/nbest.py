"""The K lowest-cost strings of a lattice, exactly (float64), as an n-best evidence space.

The paper's accelerated system takes the posteriors from a 200-best list instead of the full lattice. Here the
lattice is first determinised (:mod:`lattices.determinize`) so that each string has exactly one path, with the
semiring's string cost (best derivation, or the sum of derivations); then the K cheapest paths of that
deterministic lattice are the K best unique strings. This is the float64 equivalent of
``pynini.shortestpath(fst, nshortest=K, unique=True)`` (which ranks in float32 and, for ``unique``, determinises
in the tropical semiring).

Search: best-first (A*) over path prefixes, with the exact cost-to-go of every state as the heuristic, so each
string popped as complete is the next best one. Ties are broken by the label sequence, smallest first.
"""
from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from lattices.lattice import INF, Lattice

__all__ = ["StringArrays", "best_strings", "cost_to_go"]


@dataclass(frozen=True)
class StringArrays:
    """An n-best list as arrays: string s is ``tokens[offsets[s]:offsets[s+1]]`` with cost ``costs[s]``
    (tokens [T] int64, offsets [S+1] int64, costs [S] float64), best first."""

    tokens: np.ndarray
    offsets: np.ndarray
    costs: np.ndarray

    @classmethod
    def from_list(cls, strings: Sequence[tuple[Sequence[int], float]]) -> "StringArrays":
        lengths = np.fromiter((len(labels) for labels, _ in strings), np.int64, len(strings))
        tokens = np.fromiter((x for labels, _ in strings for x in labels), np.int64, int(lengths.sum()))
        costs = np.fromiter((cost for _, cost in strings), np.float64, len(strings))
        return cls(tokens, np.concatenate(([0], np.cumsum(lengths))).astype(np.int64), costs)

    def __len__(self) -> int:
        return int(self.costs.size)

    def as_list(self) -> list[tuple[tuple[int, ...], float]]:
        """[(labels, cost)], best first."""
        tokens, bounds = self.tokens.tolist(), self.offsets.tolist()
        return [(tuple(tokens[bounds[s]:bounds[s + 1]]), cost) for s, cost in enumerate(self.costs.tolist())]


def cost_to_go(lattice: Lattice) -> np.ndarray:
    """Per state, the cost of its cheapest completion (final cost included); ``inf`` if none."""
    beta = lattice.final.copy()
    src, dst, cost = lattice.src, lattice.dst, lattice.cost
    order = np.argsort(-src, kind="stable")  # states in decreasing topological order
    for i in order.tolist():
        w = cost[i] + beta[dst[i]]
        if w < beta[src[i]]:
            beta[src[i]] = w
    return beta


def best_strings(dfa: Lattice, k: int) -> list[tuple[tuple[int, ...], float]]:
    """The ``k`` cheapest strings of a deterministic, epsilon-free lattice, cheapest first, with their costs.

    On a non-deterministic lattice this would return derivations, possibly the same string several times:
    determinise first.
    """
    if k <= 0:
        raise ValueError(f"the n-best size must be positive, not {k}")
    if dfa.num_states == 0:
        return []
    if np.any(dfa.label == 0):
        raise ValueError("best_strings needs an epsilon-free deterministic lattice (see lattices.determinize)")
    beta = cost_to_go(dfa)
    out = dfa.out_arcs()
    final = dfa.final.tolist()
    # entries: (estimated total, labels, state, prefix cost, complete?)
    heap: list[tuple[float, tuple[int, ...], int, float, bool]] = [(float(beta[dfa.start]), (), dfa.start, 0.0, False)]
    result: list[tuple[tuple[int, ...], float]] = []
    while heap and len(result) < k:
        estimate, labels, q, prefix, complete = heapq.heappop(heap)
        if complete:
            result.append((labels, prefix))
            continue
        if final[q] != INF:
            total = prefix + final[q]
            heapq.heappush(heap, (total, labels, q, total, True))
        for x, d, c in out[q]:
            if math.isfinite(beta[d]):
                heapq.heappush(heap, (prefix + c + beta[d], labels + (x,), d, prefix + c, False))
    return result
