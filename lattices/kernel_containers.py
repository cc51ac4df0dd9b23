"""Containers for numba kernels: growable arrays, and an open-addressing hash table from non-negative int64 keys to
int64 values.

    array = push(array, size, value)                   # array[size] = value, the array doubled when full


numba's typed dictionary costs tens of nanoseconds per operation (reference counting, generic hashing); the
kernels of :mod:`lattices.posterior_kernels` and :mod:`lattices.lmatrix_kernels` look up a key per n-gram window,
so they use this instead: two arrays (keys, -1 where empty; values), linear probing from a Fibonacci hash, the
capacity a power of two kept at least twice the number of entries. The arrays are passed around and returned like
numpy arrays (a function that may grow the table returns the new ones).

    keys, values = new_table(expected)
    value = lookup(keys, values, key)                  # -1 when absent
    keys, values, count = insert(keys, values, count, key, value)   # key must be absent
"""
from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["push", "new_table", "lookup", "insert"]

_EMPTY = -1
_GOLDEN = np.uint64(11400714819323198485)  # 2^64 / the golden ratio


@njit(cache=True)
def push(array: np.ndarray, size: int, value) -> np.ndarray:
    """`array` with array[size] = value, grown (doubled) when full: size is the number of entries in use."""
    if size == array.shape[0]:
        bigger = np.empty(max(16, 2 * size), array.dtype)
        bigger[:size] = array[:size]
        array = bigger
    array[size] = value
    return array


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
def insert(keys: np.ndarray, values: np.ndarray, count: int, key: int, value: int
           ) -> tuple[np.ndarray, np.ndarray, int]:
    """The table with `key` -> `value` added (`key` absent, non-negative), grown when half full; and the new count."""
    if 2 * (count + 1) > keys.size:
        bigger_keys = np.full(2 * keys.size, _EMPTY, np.int64)
        bigger_values = np.empty(2 * keys.size, np.int64)
        for i in range(keys.size):
            if keys[i] != _EMPTY:
                slot = _slot(bigger_keys, keys[i])
                bigger_keys[slot], bigger_values[slot] = keys[i], values[i]
        keys, values = bigger_keys, bigger_values
    slot = _slot(keys, key)
    keys[slot], values[slot] = key, value
    return keys, values, count + 1
