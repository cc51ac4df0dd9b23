"""Compiled kernels (numba) that read the strings of an n-shortest-paths FST without a Python call per path.

``pynini.shortestpath(nshortest=K)`` returns an acyclic FST whose paths are the K best paths. Reading them with
``fst.paths()`` costs a Python round trip per path and per label (about 2 ms for 200 paths of 36 tokens, as much
as the C++ search itself). Here the FST's arrays (:func:`lattices.fst_binary.standard_arrays`, float32 weights)
have their paths enumerated in compiled code, with every path's cost summed in float32 from the start state in
the order OpenFst's path iterator uses, so the costs are bit for bit those of ``paths().weight()``.

    tokens, offsets, costs, grams, prefix, last, gram_order = enumerate_paths(
        num_states, start, src, dst, label, cost, final, order)   # the FST's arrays; n-grams up to `order`
    ranked = rank_strings(tokens, offsets, costs)[:k]     # by cost, then by labels (shorter prefix first)
    best_tokens, best_offsets = take_strings(tokens, offsets, ranked)
    values = ranked_sums(grams, offsets, ranked, weights, prefix.size)   # weights [k] by rank
"""
from __future__ import annotations

import numpy as np
from numba import njit

from lattices.kernel_containers import lookup, new_table, set_new

_NONE = -1

__all__ = ["enumerate_paths", "rank_strings", "ranked_sums", "take_strings"]


@njit(cache=True)
def _arc_ranges(num_states: int, src: np.ndarray) -> np.ndarray:
    """[num_states + 1] the arcs of state q are first[q]:first[q+1] (arcs grouped by source state)."""
    first = np.zeros(num_states + 1, np.int64)
    for e in range(src.size):
        first[src[e] + 1] += 1
    return np.cumsum(first)


@njit(cache=True)
def _path_sizes(start: int, first: np.ndarray, src: np.ndarray, dst: np.ndarray, label: np.ndarray,
                final: np.ndarray) -> tuple[int, int]:
    """(number of complete paths, their tokens in all) by the same depth-first walk as :func:`enumerate_paths`."""
    stack_arc = np.empty(first.size, np.int64)
    depth, n_real, n_paths, n_tokens = 0, 0, 0, 0
    state, next_arc = start, first[start]
    while True:
        if next_arc == first[state] and final[state] != np.inf:
            n_paths += 1
            n_tokens += n_real
        if next_arc < first[state + 1]:
            e = next_arc
            stack_arc[depth] = e
            depth += 1
            n_real += label[e] != 0
            state, next_arc = dst[e], first[dst[e]]
        elif depth == 0:
            break
        else:
            depth -= 1
            e = stack_arc[depth]
            n_real -= label[e] != 0
            state, next_arc = src[e], e + 1
    return n_paths, n_tokens


@njit(cache=True)
def enumerate_paths(num_states: int, start: int, src: np.ndarray, dst: np.ndarray, label: np.ndarray,
                    cost: np.ndarray, final: np.ndarray, order: int):
    """Every complete path of an acyclic FST (arcs grouped by source state, in order), depth first.

    Returns tokens [T] (the labels without epsilons; path p = tokens[offsets[p]:offsets[p+1]]), offsets [P+1],
    costs [P] float32 (the arc weights added from the start state, the final weight last), and the n-grams of the
    paths as a trie of ids (see :func:`lattices.posterior_kernels.ngram_tokens`): grams [T, order], the id of the
    n-gram of order n+1 that ends at each token (-1 where the path is shorter), and prefix, last, gram_order [G].
    A first walk counts the paths and tokens, so every array is allocated once (no growing in the loop).
    """
    width = max(order, 1)
    first = _arc_ranges(num_states, src)
    n_paths, n_tokens = _path_sizes(start, first, src, dst, label, final)
    tokens = np.empty(n_tokens, np.int64)
    grams = np.empty((n_tokens, width), np.int64)
    offsets = np.zeros(n_paths + 1, np.int64)
    costs = np.empty(n_paths, np.float32)
    keys, ids = new_table(n_tokens * width)  # (prefix id + 1) * base + token -> n-gram id
    prefix = np.empty(n_tokens * width, np.int64)
    last = np.empty(n_tokens * width, np.int64)
    gram_order = np.empty(n_tokens * width, np.int64)
    base = np.int64(label.max()) + 1 if label.size else np.int64(1)
    # the current path, one entry per depth: its arc, the float32 cost through it, the n-grams ending at its last
    # token (row depth + 1; row 0 is the empty path) and whether the arc carries a token
    stack_arc = np.empty(num_states + 1, np.int64)
    stack_cost = np.empty(num_states + 1, np.float32)
    stack_gram = np.full((num_states + 2, width), _NONE, np.int64)
    depth, t, p, n_grams = 0, 0, 0, 0
    state, prefix_cost, next_arc = start, np.float32(0.0), first[start]
    while True:
        if next_arc == first[state] and final[state] != np.inf:  # entering a final state: a complete path
            for i in range(depth):
                if label[stack_arc[i]] != 0:
                    tokens[t] = label[stack_arc[i]]
                    for n in range(width):
                        grams[t, n] = stack_gram[i + 1, n]
                    t += 1
            costs[p] = np.float32(prefix_cost + final[state])
            p += 1
            offsets[p] = t
        if next_arc < first[state + 1]:  # descend along the next arc
            e = next_arc
            x = label[e]
            stack_arc[depth] = e
            prefix_cost = np.float32(prefix_cost + cost[e])
            stack_cost[depth] = prefix_cost
            for n in range(width):
                if x == 0:  # an epsilon: the n-grams of the token before
                    stack_gram[depth + 1, n] = stack_gram[depth, n]
                    continue
                parent = _NONE if n == 0 else stack_gram[depth, n - 1]  # the n-gram = (the shorter one before) + x
                if n > 0 and parent == _NONE:
                    stack_gram[depth + 1, n] = _NONE
                    continue
                key = (parent + 1) * base + x
                g = lookup(keys, ids, key)
                if g == _NONE:
                    g = n_grams
                    set_new(keys, ids, key, g)
                    prefix[n_grams], last[n_grams], gram_order[n_grams] = parent, x, n + 1
                    n_grams += 1
                stack_gram[depth + 1, n] = g
            depth += 1
            state, next_arc = dst[e], first[dst[e]]
        elif depth == 0:
            break
        else:  # back up to the source of the last arc and go on with its next arc
            depth -= 1
            e = stack_arc[depth]
            state, next_arc = src[e], e + 1
            prefix_cost = stack_cost[depth - 1] if depth > 0 else np.float32(0.0)
    return (tokens, offsets, costs, grams, prefix[:n_grams].copy(), last[:n_grams].copy(),
            gram_order[:n_grams].copy())


@njit(cache=True)
def ranked_sums(grams: np.ndarray, offsets: np.ndarray, ranked: np.ndarray, weights: np.ndarray,
                n_grams: int) -> np.ndarray:
    """[G] p(u) = sum of weights[r] over the ranked strings r (string ranked[r]) that contain n-gram u, added in
    rank order, each string once per n-gram (the sums of :func:`lattices.posterior_kernels.string_sums`)."""
    values = np.zeros(n_grams)
    counted_by = np.full(n_grams, _NONE, np.int64)
    for r in range(ranked.size):
        s = ranked[r]
        for t in range(offsets[s], offsets[s + 1]):
            for n in range(grams.shape[1]):
                g = grams[t, n]
                if g == _NONE:
                    break
                if counted_by[g] != r:
                    counted_by[g] = r
                    values[g] += weights[r]
    return values


@njit(cache=True)
def _before(tokens: np.ndarray, offsets: np.ndarray, costs: np.ndarray, a: int, b: int) -> bool:
    """Whether string a sorts before string b: by cost, then by labels (a proper prefix first)."""
    if costs[a] != costs[b]:
        return costs[a] < costs[b]
    i, j = offsets[a], offsets[b]
    while i < offsets[a + 1] and j < offsets[b + 1]:
        if tokens[i] != tokens[j]:
            return tokens[i] < tokens[j]
        i += 1
        j += 1
    return offsets[a + 1] - offsets[a] < offsets[b + 1] - offsets[b]


@njit(cache=True)
def rank_strings(tokens: np.ndarray, offsets: np.ndarray, costs: np.ndarray) -> np.ndarray:
    """[S] the strings' indices sorted by cost, then by their labels (Python's order of (cost, tuple) pairs)."""
    order = np.argsort(costs, kind="mergesort")
    for i in range(1, order.size):  # insertion sort: the order is already right except within equal costs
        j = i
        while j > 0 and _before(tokens, offsets, costs, order[j], order[j - 1]):
            order[j], order[j - 1] = order[j - 1], order[j]
            j -= 1
    return order


@njit(cache=True)
def take_strings(tokens: np.ndarray, offsets: np.ndarray, order: np.ndarray):
    """(tokens, offsets) of the strings ``order`` [S'] in that order."""
    new_offsets = np.zeros(order.size + 1, np.int64)
    for i in range(order.size):
        new_offsets[i + 1] = new_offsets[i] + offsets[order[i] + 1] - offsets[order[i]]
    new_tokens = np.empty(new_offsets[-1], np.int64)
    for i in range(order.size):
        new_tokens[new_offsets[i]:new_offsets[i + 1]] = tokens[offsets[order[i]]:offsets[order[i] + 1]]
    return new_tokens, new_offsets
