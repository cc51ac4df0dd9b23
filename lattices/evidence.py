"""The evidence space E: which strings count, and with which probability.

P(string) is proportional to exp(-alpha * cost(string)), where the cost of a string with several derivations
(paths) is chosen by the semiring:

- ``tropical``: its best derivation (tropical determinisation, as the Cambridge HiFST tools do);
- ``log``: all derivations summed, i.e. cost = -log sum exp(-alpha * cost(d)) / alpha (log determinisation).

and the strings are either the whole lattice (``nbest=0``) or its K best unique strings under that same string
cost (the paper's accelerated system uses K = 200). The result is a lattice whose paths, each weighted by
exp(-cost), carry exactly that distribution (costs already multiplied by alpha), ready for
:func:`lattices.posteriors.forward_posteriors`.

Two engines compute it: ``exact`` (float64, Python: the reference) and ``openfst`` (C++ through pynini, float32
tropical costs, about 10x faster; :mod:`lattices.openfst`). The ``openfst`` engine's tropical determinisation runs
in this project's C++ (:mod:`lattices.compiled_determinize`), which gives OpenFst's result bit for bit.

For the full lattice in the log semiring no determinisation is needed: "contains u at least once" is a
property of the string, so the forward pass over all derivations already sums them. For the full lattice in the
tropical semiring, ``max_states`` bounds the determinised lattice: one that would be larger is pruned to the
widest cost margin that fits (:mod:`lattices.pruning`; the margin comes back in :class:`BoundedSpace`).
"""
from __future__ import annotations

from lattices.compiled_determinize import tropical_determinize, tropical_determinize_within
from lattices.determinize import SEMIRINGS, determinize
from lattices.lattice import Lattice, from_paths
from lattices.nbest import StringArrays, best_strings
from lattices.openfst import ENGINES, openfst_best_string_arrays
from lattices.pruning import BoundedSpace, determinize_within

__all__ = ["ENGINES", "BoundedSpace", "bounded_evidence_space", "check_space", "evidence_space",
           "nbest_string_arrays", "nbest_strings", "DEFAULT_MAX_STATES"]

#: The default bound on a determinised full-lattice evidence space: about 2 GB in the forward pass of orders 1-4.
DEFAULT_MAX_STATES = 100_000


def nbest_strings(lattice: Lattice, k: int, semiring: str = "tropical", alpha: float = 1.0,
                  engine: str = "exact") -> list[tuple[tuple[int, ...], float]]:
    """The K best unique strings with their alpha-scaled costs under the semiring, best first."""
    return nbest_string_arrays(lattice, k, semiring, alpha, engine).as_list()


def nbest_string_arrays(lattice: Lattice, k: int, semiring: str = "tropical", alpha: float = 1.0,
                        engine: str = "exact") -> StringArrays:
    """:func:`nbest_strings` as arrays."""
    check_space(semiring, engine)
    if k <= 0:
        raise ValueError(f"the n-best size must be positive, not {k}")
    if engine == "openfst":
        return openfst_best_string_arrays(lattice.scaled(alpha), k, semiring)
    return StringArrays.from_list(best_strings(determinize(lattice.scaled(alpha), semiring), k))


def evidence_space(lattice: Lattice, semiring: str = "tropical", alpha: float = 1.0, nbest: int = 0,
                   engine: str = "exact", max_states: int = 0) -> Lattice:
    """A lattice (costs times alpha) whose path distribution is the evidence space's string distribution."""
    return bounded_evidence_space(lattice, semiring, alpha, nbest, engine, max_states).lattice


def bounded_evidence_space(lattice: Lattice, semiring: str = "tropical", alpha: float = 1.0, nbest: int = 0,
                           engine: str = "exact", max_states: int = 0) -> BoundedSpace:
    """:func:`evidence_space` and the margin a tropical full lattice was pruned to (inf: none; 0: no bound)."""
    check_space(semiring, engine)
    if nbest < 0:
        raise ValueError(f"nbest must be 0 (full lattice) or positive, not {nbest}")
    if nbest:
        return BoundedSpace(from_paths(nbest_strings(lattice, nbest, semiring, alpha, engine), lattice.symbols))
    scaled = lattice.scaled(alpha)
    if semiring == "tropical":
        if engine == "openfst":
            return determinize_within(scaled, max_states, tropical_determinize_within, tropical_determinize)
        return determinize_within(scaled, max_states, lambda lat, cap: determinize(lat, "tropical", cap),
                                  lambda lat: determinize(lat, "tropical"))
    return BoundedSpace(scaled)


def check_space(semiring: str, engine: str = "exact") -> None:
    """A ValueError unless the semiring and the engine are known."""
    if semiring not in SEMIRINGS:
        raise ValueError(f"unknown semiring {semiring!r}: choose one of {SEMIRINGS}")
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}: choose one of {ENGINES}")
