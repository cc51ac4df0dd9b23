"""Compiled kernels (numba) that build L and its row automaton from n-gram posteriors held as arrays.

:mod:`lattices.lmatrix` and :mod:`lattices.row_automaton` call :func:`lmatrix_tables`; the maths is ALGORITHMS.md
section 4. The n-grams (``tokens`` [G, W], left-aligned, -1 after them) are put in a trie whose nodes are their
prefixes; a history's suffixes are found along suffix links. For each row h (a history of 0..M tokens that
occurs, M = order - 1):

- L's stored part: ``L[h, y] - Theta_0 - Theta_1 p(y) = sum_{j=1..|h|} Theta_{j+1} p(h[-j:] y)``, summed in that
  order (j rising) in float64, one entry per y, sorted by y;
- the automaton's exceptions: for each y with ``s y`` a row for some suffix s of h of 1..M-1 tokens, the row of the
  longest such ``s y``, sorted by y.

The rows are the histories sorted by (length, tokens); row 0 is the empty history.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from lattices.kernel_containers import lookup, new_table, set_new, stable_order

__all__ = ["LMatrixTables", "lmatrix_tables"]

_NONE = -1


@dataclass(frozen=True)
class LMatrixTables:
    """The arrays of one sentence's rows, automaton and L (see the module docstring)."""

    history_tokens: np.ndarray  # [R, max(M, 1)] int64: row i's history, left-aligned, -1 after it
    unigram_tokens: np.ndarray  # [U] sorted tokens y that are rows (y,)
    unigram_rows: np.ndarray    # [U]
    trans_rows: np.ndarray      # [T] exceptions, sorted by (row, token)
    trans_tokens: np.ndarray    # [T]
    trans_next: np.ndarray      # [T]
    hi_indptr: np.ndarray       # [R+1]
    hi_tokens: np.ndarray       # [nnz], sorted within a row
    hi_values: np.ndarray       # [nnz] float64


def lmatrix_tables(tokens: np.ndarray, values: np.ndarray, theta: np.ndarray, max_history: int) -> LMatrixTables:
    """Rows, automaton and L's stored part from distinct n-grams ``tokens`` [G, W] (left-aligned, -1 after them)
    with posteriors ``values`` [G]; ``theta`` [order + 1]. ValueError when a history's prefix or suffix is not
    among the n-grams (they are not the n-grams of one lattice)."""
    tokens = np.ascontiguousarray(tokens, np.int64)
    lengths = (tokens >= 0).sum(axis=1)
    width = max(max_history, 1)
    padded = np.full((tokens.shape[0], width), -1, np.int64)
    padded[:, :min(width, tokens.shape[1])] = tokens[:, :width]
    status, row_order, indptr, hi_tokens, hi_values, trans_rows, trans_tokens, trans_next = _tables(
        tokens, lengths, np.ascontiguousarray(values, np.float64), np.ascontiguousarray(theta, np.float64),
        max_history)
    if status != _NONE:
        history = tuple(tokens[status, :lengths[status]].tolist())
        raise ValueError(f"history {history} occurs but not its prefix or suffix: not the n-grams of one lattice")
    history_tokens = np.concatenate([np.full((1, width), -1, np.int64), padded[row_order]])
    unigrams = row_order[lengths[row_order] == 1]  # rows 1..U are the unigrams, by token
    return LMatrixTables(history_tokens, tokens[unigrams, 0].copy(), np.arange(1, unigrams.size + 1, dtype=np.int64),
                         trans_rows, trans_tokens, trans_next, indptr, hi_tokens, hi_values)



@njit(cache=True)
def _by_parent(parent: np.ndarray, token: np.ndarray, num_parents: int, base: int) -> np.ndarray:
    """The nodes ordered by (parent, token): by token, then stably by parent. Every (parent, token) pair is one
    node, so this is the one order of their keys."""
    by_token = stable_order(token, base)
    return by_token[stable_order(parent[by_token], num_parents)]


@njit(cache=True)
def _sort_small(values: np.ndarray, n: int) -> None:
    """values[:n] sorted in place: an insertion sort for the few short sorted runs of one row (no allocation),
    numpy's sort past 64 values."""
    if n > 64:
        values[:n] = np.sort(values[:n])
        return
    for i in range(1, n):
        x = values[i]
        j = i - 1
        while j >= 0 and values[j] > x:
            values[j + 1] = values[j]
            j -= 1
        values[j + 1] = x


@njit(cache=True)
def _row_order(child_ptr: np.ndarray, by_parent: np.ndarray, node_gram: np.ndarray, root: int,
               max_history: int) -> np.ndarray:
    """The n-grams of 1..max_history tokens sorted by (length, tokens): the trie's nodes breadth-first, children by
    token (a level's nodes then come in the order of their parents, then of their last token)."""
    queue = np.empty(root + 1, np.int64)
    queue[0] = root
    depth = np.zeros(root + 1, np.int64)  # by place in the queue
    head, tail = 0, 1
    rows = np.empty(root, np.int64)
    n_rows = 0
    while head < tail:
        node, level = queue[head], depth[head]
        head += 1
        if level == max_history:
            continue
        for c in range(child_ptr[node], child_ptr[node + 1]):
            child = by_parent[c]
            queue[tail], depth[tail] = child, level + 1
            tail += 1
            if node_gram[child] != _NONE:
                rows[n_rows] = node_gram[child]
                n_rows += 1
    return rows[:n_rows].copy()


@njit(cache=True)
def _tables(tokens: np.ndarray, lengths: np.ndarray, values: np.ndarray, theta: np.ndarray, max_history: int):
    """Rows, exceptions and L's stored part of one sentence.

    Returns (status, row_order [R-1]: the n-grams that are histories (1..max_history tokens) in row order (rows
    1..R-1), hi_indptr [R+1], hi_tokens, hi_values (float64), trans_rows, trans_tokens, trans_next); status is -1
    when all is well, else the index of a history whose prefix or suffix is missing.
    """
    n_grams = lengths.size
    base = np.int64(tokens.max()) + 1 if tokens.size else np.int64(1)
    max_nodes = max(int(lengths.sum()), 1)  # each n-gram adds at most its length in nodes: no growing below
    child_keys, child_values = new_table(max_nodes)
    node_gram = np.full(max_nodes, _NONE, np.int64)  # the n-gram of each trie node (-1: a prefix only)
    node_parent = np.empty(max_nodes, np.int64)
    node_token = np.empty(max_nodes, np.int64)
    n_nodes = 0
    gram_node = np.empty(n_grams, np.int64)
    for g in range(n_grams):
        node = _NONE
        for k in range(lengths[g]):
            key = (node + 1) * base + tokens[g, k]
            child = lookup(child_keys, child_values, key)
            if child == _NONE:
                child = n_nodes
                set_new(child_keys, child_values, key, child)
                node_parent[n_nodes] = node
                node_token[n_nodes] = tokens[g, k]
                n_nodes += 1
            node = child
        node_gram[node] = g
        gram_node[g] = node
    # children of each node (and of the root, index n_nodes), by token
    parent_key = node_parent[:n_nodes].copy()
    parent_key[parent_key == _NONE] = n_nodes
    by_parent = _by_parent(parent_key, node_token[:n_nodes], n_nodes + 1, base)
    child_ptr = np.searchsorted(parent_key[by_parent], np.arange(n_nodes + 2))
    # rows: row of each node that is a history (0 for the root)
    row_order = _row_order(child_ptr, by_parent, node_gram, n_nodes, max_history)
    n_rows = row_order.size + 1
    node_row = np.full(n_nodes + 1, _NONE, np.int64)
    node_row[n_nodes] = 0
    for i in range(row_order.size):
        node_row[gram_node[row_order[i]]] = i + 1
    # suffix link of each row's node: the node of h[1:] (the root for one token)
    row_node = np.empty(n_rows, np.int64)
    row_node[0] = n_nodes
    row_suffix = np.full(n_rows, _NONE, np.int64)
    for i in range(row_order.size):
        g = row_order[i]
        row_node[i + 1] = gram_node[g]
        prefix_node = node_parent[gram_node[g]]
        node = _NONE  # the suffix h[1:]
        for k in range(1, lengths[g]):
            node = lookup(child_keys, child_values, (node + 1) * base + tokens[g, k])
            if node == _NONE:
                break
        if lengths[g] > 1 and (node_row[prefix_node] == _NONE or node == _NONE or node_row[node] == _NONE):
            return (g, row_order, np.zeros(1, np.int64), np.zeros(0, np.int64), np.zeros(0), np.zeros(0, np.int64),
                    np.zeros(0, np.int64), np.zeros(0, np.int64))
        row_suffix[i + 1] = node_row[node] if lengths[g] > 1 else 0
    accumulated = np.zeros(base)  # per token y of the row being built
    stamp = np.full(base, _NONE, np.int64)
    found_row = np.empty(base, np.int64)
    touched = np.empty(base, np.int64)
    # at most one stored entry per child of a node on a row's chain (one exception per child of a suffix of 1..M-1
    # tokens): sized once, so that no array is replaced in the loop (reference counting on every row)
    max_hi = 0
    max_trans = 0
    for i in range(1, n_rows):
        row = i
        for j in range(lengths[row_order[i - 1]], 0, -1):  # row = chain[j] below
            children = child_ptr[row_node[row] + 1] - child_ptr[row_node[row]]
            max_hi += children
            if j < max_history:
                max_trans += children
            row = row_suffix[row]
    hi_indptr = np.zeros(n_rows + 1, np.int64)
    hi_tokens = np.empty(max_hi, np.int64)
    hi_values = np.empty(max_hi, np.float64)
    n_hi = 0
    trans_rows = np.empty(max_trans, np.int64)
    trans_tokens = np.empty(max_trans, np.int64)
    trans_next = np.empty(max_trans, np.int64)
    n_trans = 0
    chain = np.empty(max(max_history, 1) + 1, np.int64)  # chain[j]: the row of h's suffix of j tokens
    for i in range(n_rows):
        length = 0 if i == 0 else lengths[row_order[i - 1]]
        row = i
        for j in range(length, -1, -1):
            chain[j] = row
            row = row_suffix[row] if j > 0 else 0
        # L's stored part: j = 1..|h|
        n_touched = 0
        for j in range(1, length + 1):
            node = row_node[chain[j]]
            weight = theta[j + 1]
            for c in range(child_ptr[node], child_ptr[node + 1]):
                child = by_parent[c]
                g = node_gram[child]
                if g == _NONE:
                    continue
                y = node_token[child]
                if stamp[y] != 2 * i:
                    stamp[y] = 2 * i
                    accumulated[y] = 0.0
                    touched[n_touched] = y
                    n_touched += 1
                accumulated[y] += weight * values[g]
        _sort_small(touched, n_touched)
        for k in range(n_touched):
            y = touched[k]
            hi_tokens[n_hi], hi_values[n_hi] = y, accumulated[y]
            n_hi += 1
        hi_indptr[i + 1] = n_hi
        # exceptions: the longest suffix s (1..M-1 tokens) with s y a row
        n_found = 0
        for j in range(min(length, max_history - 1), 0, -1):
            node = row_node[chain[j]]
            for c in range(child_ptr[node], child_ptr[node + 1]):
                child = by_parent[c]
                target = node_row[child]
                if target == _NONE:
                    continue
                y = node_token[child]
                if stamp[y] != 2 * i + 1:
                    stamp[y] = 2 * i + 1
                    found_row[y] = target
                    touched[n_found] = y
                    n_found += 1
        _sort_small(touched, n_found)
        for k in range(n_found):
            y = touched[k]
            trans_rows[n_trans], trans_tokens[n_trans], trans_next[n_trans] = i, y, found_row[y]
            n_trans += 1
    return (_NONE, row_order, hi_indptr, hi_tokens[:n_hi].copy(), hi_values[:n_hi].copy(), trans_rows[:n_trans].copy(),
            trans_tokens[:n_trans].copy(), trans_next[:n_trans].copy())
