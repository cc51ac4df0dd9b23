"""Compiled kernels (numba) for :mod:`lattices.acceptor`: the loops over states and arcs that turn a deterministic
lattice into an acceptor. Each computes what the Python loops it replaced computed, in the same order of floating
point operations, so the acceptors are the same to the bit.
"""
from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["cheapest_completion", "fewest_tokens_to_final", "reachable_order"]

#: to_final of a state that reaches no final state.
UNREACHABLE = np.iinfo(np.int64).max // 4


@njit(cache=True)
def cheapest_completion(final: np.ndarray, src: np.ndarray, dst: np.ndarray, cost: np.ndarray,
                        order: np.ndarray) -> np.ndarray:
    """[Q] float64: the cost of the best path from each state to the end, relaxing the arcs in `order` (last
    source first: the states are numbered topologically)."""
    best = final.astype(np.float64)
    for k in order:
        s, d = src[k], dst[k]
        if cost[k] + best[d] < best[s]:
            best[s] = cost[k] + best[d]
    return best


@njit(cache=True)
def _targets_by_source(num_states: int, src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The arcs' targets grouped by source (in the given order within one): state q's are
    targets[first[q]:first[q + 1]]."""
    count = np.zeros(num_states + 1, np.int64)
    for s in src:
        count[s + 1] += 1
    first = np.cumsum(count)
    fill = first[:-1].copy()
    targets = np.empty(src.size, np.int64)
    for k in range(src.size):
        targets[fill[src[k]]] = dst[k]
        fill[src[k]] += 1
    return first, targets


@njit(cache=True)
def reachable_order(num_states: int, start: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """The states reachable from `start`, breadth first: `start`, then the targets of each state's arcs in the
    order the arcs are given, each state at its first sight."""
    first, targets = _targets_by_source(num_states, src, dst)
    seen = np.zeros(num_states, np.bool_)
    order = np.empty(num_states, np.int64)
    order[0], seen[start], size = start, True, 1
    head = 0
    while head < size:
        q = order[head]
        head += 1
        for k in range(first[q], first[q + 1]):
            d = targets[k]
            if not seen[d]:
                seen[d] = True
                order[size] = d
                size += 1
    return order[:size]


@njit(cache=True)
def fewest_tokens_to_final(num_states: int, src: np.ndarray, dst: np.ndarray, final: np.ndarray) -> np.ndarray:
    """[Q] int64: the fewest arcs from each state to a final state (UNREACHABLE: none), by relaxing the states in
    reverse topological order; a state count below Q in that order means a cycle (returned as an empty array)."""
    first, targets = _targets_by_source(num_states, src, dst)
    indegree = np.zeros(num_states, np.int64)
    for d in dst:
        indegree[d] += 1
    ready = np.empty(num_states, np.int64)
    top = 0
    for q in range(num_states):
        if indegree[q] == 0:
            ready[top] = q
            top += 1
    order = np.empty(num_states, np.int64)
    size = 0
    while top > 0:
        top -= 1
        q = ready[top]
        order[size] = q
        size += 1
        for k in range(first[q], first[q + 1]):
            d = targets[k]
            indegree[d] -= 1
            if indegree[d] == 0:
                ready[top] = d
                top += 1
    if size != num_states:
        return np.empty(0, np.int64)
    dist = np.empty(num_states, np.int64)
    for q in range(num_states):
        dist[q] = 0 if final[q] else UNREACHABLE
    for i in range(num_states - 1, -1, -1):
        q = order[i]
        for k in range(first[q], first[q + 1]):
            if dist[targets[k]] + 1 < dist[q]:
                dist[q] = dist[targets[k]] + 1
    return dist
