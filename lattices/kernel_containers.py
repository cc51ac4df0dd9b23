"""Containers for numba kernels: growable arrays, and an open-addressing hash table from non-negative int64 keys to
int64 values, and a stable counting sort.

A kernel reserves room for everything a step can add, then writes in place: a call that may replace an array
inside the hottest loop costs reference counting on every call (a growable-array "push" per entry made the kernels
2-10x slower). Even once per outer step (a lattice state, a row) an array variable that may be replaced costs
reference counting on every step, so the hottest kernels keep replacements out of their loops: they size their
arrays once from a bound (:func:`lattices.lmatrix_kernels._tables`), or run an inner kernel that stops where it
runs out of room and grow its arrays between calls (:func:`lattices.posterior_kernels.expand`: 2.4x faster so).

    array = room(array, needed)                        # the array, or a larger copy, with room for `needed` entries

numba's typed dictionary costs tens of nanoseconds per operation (reference counting, generic hashing); the
kernels of :mod:`lattices.posterior_kernels`, :mod:`lattices.lmatrix_kernels` and :mod:`lattices.path_kernels`
look up a key per n-gram window, so they use this instead: two arrays (keys, -1 where empty; values), linear
probing from a Fibonacci hash, the capacity a power of two kept at least twice the number of entries.

    keys, values = new_table(expected)                 # room for `expected` entries
    keys, values = table_room(keys, values, needed)    # the table, or a rehashed larger copy, with room for `needed`
    value = lookup(keys, values, key)                  # -1 when absent
    set_new(keys, values, key, value)                  # key absent; in place, so there must be room for it

numba compiles these helpers into each kernel that calls them, and caches that kernel under its own file only
(numba issue 1833): the Makefile's install drops the cached kernels whenever this file changes.
"""
from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["room", "new_table", "table_room", "lookup", "set_new", "stable_order"]

_EMPTY = -1
_GOLDEN = np.uint64(11400714819323198485)  # 2^64 / the golden ratio


@njit(cache=True)
def room(array: np.ndarray, needed: int) -> np.ndarray:
    """`array`, or a copy doubled until it holds `needed` entries along its first axis."""
    if needed <= array.shape[0]:
        return array
    size = max(16, array.shape[0])
    while size < needed:
        size *= 2
    bigger = np.empty((size,) + array.shape[1:], array.dtype)
    bigger[:array.shape[0]] = array
    return bigger


@njit(cache=True)
def new_table(expected: int) -> tuple[np.ndarray, np.ndarray]:
    """Empty arrays (keys, values) with room for `expected` entries before growing."""
    capacity = 16
    while capacity < 2 * expected:
        capacity *= 2
    return np.full(capacity, _EMPTY, np.int64), np.empty(capacity, np.int64)


@njit(cache=True)
def _slot(keys: np.ndarray, key: int) -> int:
    """The slot of `key`, or of the empty slot where it would go."""
    mask = keys.size - 1
    slot = int((np.uint64(key) * _GOLDEN) >> np.uint64(32)) & mask  # capacities up to 2^32
    while keys[slot] != _EMPTY and keys[slot] != key:
        slot = (slot + 1) & mask
    return slot


@njit(cache=True)
def lookup(keys: np.ndarray, values: np.ndarray, key: int) -> int:
    """The value of `key`, or -1 when it is absent."""
    slot = _slot(keys, key)
    return values[slot] if keys[slot] == key else _EMPTY


@njit(cache=True)
def table_room(keys: np.ndarray, values: np.ndarray, needed: int) -> tuple[np.ndarray, np.ndarray]:
    """The table, or a copy rehashed into a larger capacity, with room for `needed` entries in all."""
    if 2 * needed <= keys.size:
        return keys, values
    capacity = keys.size
    while capacity < 2 * needed:
        capacity *= 2
    bigger_keys = np.full(capacity, _EMPTY, np.int64)
    bigger_values = np.empty(capacity, np.int64)
    for i in range(keys.size):
        if keys[i] != _EMPTY:
            slot = _slot(bigger_keys, keys[i])
            bigger_keys[slot], bigger_values[slot] = keys[i], values[i]
    return bigger_keys, bigger_values


@njit(cache=True)
def set_new(keys: np.ndarray, values: np.ndarray, key: int, value: int) -> None:
    """`key` -> `value` added in place (`key` absent, non-negative); the table must have room for it
    (:func:`new_table` or :func:`table_room` with at least the number of entries after this one), as it does not
    grow."""
    slot = _slot(keys, key)
    keys[slot], values[slot] = key, value


@njit(cache=True)
def stable_order(keys: np.ndarray, size: int) -> np.ndarray:
    """The stable argsort of integer keys in [0, size): a counting sort (numba's merge argsort costs about 80 ns a
    key)."""
    count = np.zeros(size + 1, np.int64)
    for key in keys:
        count[key + 1] += 1
    for k in range(size):
        count[k + 1] += count[k]
    out = np.empty(keys.size, np.int64)
    for i in range(keys.size):
        out[count[keys[i]]] = i
        count[keys[i]] += 1
    return out
