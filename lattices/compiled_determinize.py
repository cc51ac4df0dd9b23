"""OpenFst's tropical determinisation of a lattice, reproduced in C++ on the Lattice's own arrays.

``tropical_determinize.cpp`` (built by `make install` into ``_tropical_determinize.so``, called through ctypes)
gives what :func:`lattices.openfst.openfst_determinize_within` gives for a tropical lattice, array for array and
bit for bit: the same float32 sums and quantised residuals, the same subsets, and ``Lattice.from_fst``'s
topological numbering. It skips the two conversions to and from OpenFst's format, which cost more than the
determinisation itself (about 3.5 of 6.7 s on 300 PBMT lattices). :func:`determinize_tropical` answers
NotImplemented where the C++ path does not apply (library not built, epsilon arcs, a state of the result that
reaches no final state); :func:`tropical_determinize_within` and :func:`tropical_determinize`, the evidence
space's entry points, then use OpenFst through pynini.
"""
from __future__ import annotations

import ctypes
import functools
from pathlib import Path

import numpy as np

from lattices.lattice import Lattice
from lattices.openfst import DETERMINIZE_DELTA, openfst_determinize, openfst_determinize_within

__all__ = ["LIBRARY", "COMPILED_SOURCES", "determinize_tropical", "load_library", "tropical_determinize",
           "tropical_determinize_within"]

LIBRARY = Path(__file__).with_name("_tropical_determinize.so")
COMPILED_SOURCES = ("tropical_determinize.cpp",)  # built into LIBRARY; the stage fingerprints hash them

_TOO_MANY_STATES = 1


@functools.cache
def load_library() -> ctypes.CDLL | None:
    """The built library with its signatures declared, or None when `make install` has not built it."""
    if not LIBRARY.exists():
        return None
    lib = ctypes.CDLL(str(LIBRARY))
    p = ctypes.c_void_p
    lib.tropical_determinize.restype = p
    lib.tropical_determinize.argtypes = [ctypes.c_int32, ctypes.c_int32] + [p] * 5 + [
        ctypes.c_float, ctypes.c_int64, ctypes.POINTER(ctypes.c_int32)]
    lib.tropical_result_states.restype = ctypes.c_int32
    lib.tropical_result_states.argtypes = [p]
    lib.tropical_result_arcs.restype = ctypes.c_int64
    lib.tropical_result_arcs.argtypes = [p]
    lib.tropical_result_copy.argtypes = [p] * 6
    lib.tropical_result_free.argtypes = [p]
    return lib


def determinize_tropical(lattice: Lattice, delta: float, max_states: int = 0):
    """The lattice determinised in the tropical semiring with float32 weights (OpenFst's ``standard`` arcs and
    ``delta``) and numbered as ``Lattice.from_fst`` numbers it; None when it would have more than ``max_states``
    states (0: no bound); NotImplemented where only OpenFst applies."""
    lib = load_library()
    if lib is None or lattice.num_states == 0 or bool((lattice.label == 0).any()):
        return NotImplemented
    cost = lattice.cost.astype(np.float32)
    final = lattice.final.astype(np.float32)
    if not np.isfinite(cost).all():
        return NotImplemented
    order = np.argsort(lattice.src, kind="stable")  # arcs grouped by source state, in the lattice's order
    out_ptr = np.searchsorted(lattice.src[order], np.arange(lattice.num_states + 1)).astype(np.int64)
    dst = np.ascontiguousarray(lattice.dst[order], np.int64)
    label = np.ascontiguousarray(lattice.label[order], np.int64)
    cost = np.ascontiguousarray(cost[order])
    status = ctypes.c_int32(0)
    handle = lib.tropical_determinize(lattice.num_states, lattice.start, out_ptr.ctypes.data, dst.ctypes.data,
                                      label.ctypes.data, cost.ctypes.data, final.ctypes.data, delta, max_states,
                                      ctypes.byref(status))
    if not handle:
        return None if status.value == _TOO_MANY_STATES else NotImplemented
    try:
        n, m = lib.tropical_result_states(handle), lib.tropical_result_arcs(handle)
        src, dst, label = (np.empty(m, np.int64) for _ in range(3))
        cost, final = np.empty(m, np.float64), np.empty(n, np.float64)
        lib.tropical_result_copy(handle, src.ctypes.data, dst.ctypes.data, label.ctypes.data, cost.ctypes.data,
                                 final.ctypes.data)
    finally:
        lib.tropical_result_free(handle)
    return Lattice(n, 0, src, dst, label, cost, final, lattice.symbols)


def tropical_determinize_within(lattice: Lattice, max_states: int) -> Lattice | None:
    """``openfst_determinize_within(lattice, "tropical", max_states)``, in C++ where it applies."""
    result = determinize_tropical(lattice, DETERMINIZE_DELTA, max_states)
    return openfst_determinize_within(lattice, "tropical", max_states) if result is NotImplemented else result


def tropical_determinize(lattice: Lattice) -> Lattice:
    """``openfst_determinize(lattice, "tropical")``, in C++ where it applies."""
    if lattice.num_states == 0:
        return Lattice.empty(lattice.symbols)
    result = determinize_tropical(lattice, DETERMINIZE_DELTA)
    return openfst_determinize(lattice, "tropical") if result is NotImplemented else result
