"""Compiled kernels (numba) over a search graph's arc arrays: the best prefix score of every state, and the A*
search of the n-best list. Each does what the Python loops it replaced did, in the same order of floating-point
operations and with the same tie-breaking, so the 1-best, the n-best lists and their scores are the same to the
bit (tests/pipeline/smt/test_graph_kernels.py compares them with the Python loops).
"""
from __future__ import annotations

import heapq

import numpy as np
from numba import njit

__all__ = ["best_prefix", "incoming_arcs", "nbest_chains"]


@njit(cache=True)
def best_prefix(u: np.ndarray, v: np.ndarray, arc_scores: np.ndarray, num_states: int
                ) -> tuple[np.ndarray, np.ndarray]:
    """[S] float64 best score from the start to each state, and [S] int64 the last arc of that path (-1 for the
    start). Arcs come grouped by target state in topological order; the first of equal-scoring arcs wins."""
    scores = np.full(num_states, -np.inf)
    back = np.full(num_states, -1, dtype=np.int64)
    scores[0] = 0.0
    for a in range(len(u)):
        s = scores[u[a]] + arc_scores[a]
        if s > scores[v[a]]:
            scores[v[a]] = s
            back[v[a]] = a
    return scores, back


@njit(cache=True)
def incoming_arcs(v: np.ndarray, num_states: int) -> tuple[np.ndarray, np.ndarray]:
    """CSR of each state's incoming arcs, in arc order: arcs[begin[s]:begin[s + 1]] enter state s."""
    begin = np.zeros(num_states + 1, dtype=np.int64)
    for a in range(len(v)):
        begin[v[a] + 1] += 1
    for s in range(num_states):
        begin[s + 1] += begin[s]
    fill = begin[:-1].copy()
    arcs = np.empty(len(v), dtype=np.int64)
    for a in range(len(v)):
        arcs[fill[v[a]]] = a
        fill[v[a]] += 1
    return begin, arcs


@njit(cache=True)
def nbest_chains(u: np.ndarray, arc_scores: np.ndarray, prefix: np.ndarray, begin: np.ndarray,
                 incoming: np.ndarray, end: int, n: int, max_pops: int
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The n best complete derivations by best-first search backwards from ``end`` with the exact prefix scores
    as heuristic (A*), as lattice.nbest's Python loop: heap entries (-(prefix + suffix), push count), so ties pop
    in push order. Returns (scores [k], chain heads [k], chain arcs, chain links): a derivation's arcs, start to
    end, are chain_arc[c], chain_arc[link[c]], ... from its head c until -1."""
    chain_arc = np.empty(1024, dtype=np.int64)
    chain_link = np.empty(1024, dtype=np.int64)
    chains = 0
    heap = [(-prefix[end], np.int64(0), np.int64(end), 0.0, np.int64(-1))]
    pushed = 1
    scores = np.empty(n, dtype=np.float64)
    heads = np.empty(n, dtype=np.int64)
    found = 0
    pops = 0
    while len(heap) > 0 and found < n and pops < max_pops:
        neg, _, v, suffix, chain = heapq.heappop(heap)
        pops += 1
        if v == 0:
            scores[found] = -neg
            heads[found] = chain
            found += 1
            continue
        for k in range(begin[v], begin[v + 1]):
            a = incoming[k]
            s = suffix + arc_scores[a]
            if chains == len(chain_arc):
                chain_arc = np.concatenate((chain_arc, np.empty(chains, dtype=np.int64)))
                chain_link = np.concatenate((chain_link, np.empty(chains, dtype=np.int64)))
            chain_arc[chains] = a
            chain_link[chains] = chain
            heapq.heappush(heap, (-(prefix[u[a]] + s), np.int64(pushed), np.int64(u[a]), s, np.int64(chains)))
            chains += 1
            pushed += 1
    return scores[:found], heads[:found], chain_arc[:chains], chain_link[:chains]
