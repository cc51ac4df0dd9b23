"""The fast engine of the evidence space: OpenFst's C++ determinisation and n-shortest paths through pynini.

The exact engine (:mod:`lattices.determinize`, :mod:`lattices.nbest`) keeps every weight in float64 and is the
reference the tests hold to 1e-9; it runs in Python, about 0.1 s for a lattice of a few thousand states. This
engine does the same two operations in C++ in a few milliseconds:

- ``tropical``: ``standard`` arcs (float32 costs, as the PBMT lattice files store them): epsilon removal,
  determinisation, and ``shortestpath(nshortest=K, unique=True)`` for the K best unique strings;
- ``log``: ``log64`` arcs (float64): epsilon removal and determinisation (sums of derivations) with a fine
  ``delta``, then the K shortest paths of the deterministic result (one path per string).

Float32 path sums differ from float64 ones by about 1e-7 relative, so posteriors agree with the exact engine to
about 1e-5 (tested); strings whose costs tie within that resolution may come out in another order.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from lattices.fst_binary import standard_arrays
from lattices.lattice import Lattice
from lattices.nbest import StringArrays
from lattices.path_kernels import enumerate_paths, rank_strings, take_strings

__all__ = ["DETERMINIZE_DELTA", "ENGINES", "BestPaths", "openfst_best_paths", "openfst_best_string_arrays",
           "openfst_best_strings", "openfst_determinize", "openfst_determinize_within"]

ENGINES = ("exact", "openfst")

#: Determinisation's weight-quantisation step (OpenFst's default, 1/1024, would merge nearly equal subsets).
DETERMINIZE_DELTA = 1e-9


def _prepared(lattice: Lattice, semiring: str):
    import pynini

    fst = lattice.to_fst("standard" if semiring == "tropical" else "log64")
    return pynini.rmepsilon(fst) if bool((lattice.label == 0).any()) else fst


def openfst_determinize_within(lattice: Lattice, semiring: str, max_states: int) -> Lattice | None:
    """The determinised lattice (as :func:`openfst_determinize`, array for array) if it has at most ``max_states``
    states, else None, at the cost of at most max_states + 1 states.

    A determinisation stopped past the cap (OpenFst's ``nstate``), with the FST's properties computed first: left
    unknown, OpenFst tests them by a full determinisation (24 s and 2.7 GB on a KFTT lattice of 49k states).
    """
    import pynini

    if lattice.num_states == 0:
        return Lattice.empty(lattice.symbols)
    fst = _prepared(lattice, semiring)
    fst.properties(pynini.ACCEPTOR | pynini.I_DETERMINISTIC | pynini.ACYCLIC, True)
    dfa = pynini.determinize(fst, delta=DETERMINIZE_DELTA, nstate=max_states + 1)
    return _as_lattice(dfa, lattice) if dfa.num_states() <= max_states else None


def openfst_determinize(lattice: Lattice, semiring: str) -> Lattice:
    """An equivalent deterministic, epsilon-free lattice: best derivation (tropical) or summed derivations (log)."""
    import pynini

    if lattice.num_states == 0:
        return Lattice.empty(lattice.symbols)
    return _as_lattice(pynini.determinize(_prepared(lattice, semiring), delta=DETERMINIZE_DELTA), lattice)


def _as_lattice(dfa, lattice: Lattice) -> Lattice:
    """A determinised FST as a Lattice with the symbols of the lattice it came from."""
    result = Lattice.from_fst(dfa)
    return Lattice(result.num_states, result.start, result.src, result.dst, result.label, result.cost,
                   result.final, lattice.symbols)


def openfst_best_strings(lattice: Lattice, k: int, semiring: str) -> list[tuple[tuple[int, ...], float]]:
    """The K cheapest unique strings with their costs, cheapest first (ties: smaller label sequence first)."""
    return openfst_best_string_arrays(lattice, k, semiring).as_list()


def openfst_best_string_arrays(lattice: Lattice, k: int, semiring: str) -> StringArrays:
    """:func:`openfst_best_strings` as arrays."""
    best = openfst_best_paths(lattice, k, semiring, 1)
    if best is None:
        return StringArrays.from_list([])
    return StringArrays(*take_strings(best.tokens, best.offsets, best.ranked), best.costs)


class BestPaths(NamedTuple):
    """The K best unique strings of a lattice as OpenFst's n-shortest FST holds them, with their n-grams."""

    tokens: np.ndarray      # [T] every path's labels, path p = tokens[offsets[p]:offsets[p+1]]
    offsets: np.ndarray     # [P+1]
    ranked: np.ndarray      # [K] the K best paths, best first
    costs: np.ndarray       # [K] their costs (float64), best first
    grams: np.ndarray       # [T, order] the n-gram ids ending at each token (-1: none)
    prefix: np.ndarray      # [G] the n-gram trie (lattices.posterior_kernels.ngram_tokens)
    last: np.ndarray        # [G]
    gram_order: np.ndarray  # [G]


def openfst_best_paths(lattice: Lattice, k: int, semiring: str, order: int) -> BestPaths | None:
    """The K best unique strings through OpenFst's n-shortest paths, read in compiled code
    (:mod:`lattices.path_kernels`); None when the lattice has none. A cost is the float32 path sum as
    ``fst.paths().weight()`` gives it, read back through its decimal form (9 significant digits, as OpenFst prints
    it), so the costs and the order are those of the path iterator."""
    import pynini

    if k <= 0:
        raise ValueError(f"the n-best size must be positive, not {k}")
    if lattice.num_states == 0:
        return None
    fst = _prepared(lattice, semiring)
    if semiring == "tropical":
        best = pynini.shortestpath(fst, nshortest=k, unique=True)
    else:
        dfa = pynini.arcmap(pynini.determinize(fst, delta=DETERMINIZE_DELTA), map_type="to_std")
        best = pynini.shortestpath(dfa, nshortest=k)
    if best.num_states() == 0:
        return None
    tokens, offsets, costs32, grams, prefix, last, gram_order = enumerate_paths(*standard_arrays(best), order)
    if costs32.size == 0:
        return None
    ranked = rank_strings(tokens, offsets, costs32)[:k]
    costs = np.asarray([float(f"{c:.9g}") for c in costs32[ranked].tolist()], np.float64)
    return BestPaths(tokens, offsets, ranked, costs, grams, prefix, last, gram_order)
