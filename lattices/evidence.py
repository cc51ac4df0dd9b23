"""The evidence space E: which strings count, and with which probability.

P(string) is proportional to exp(-alpha * cost(string)), where the cost of a string with several derivations
(paths) is chosen by the semiring:

- ``tropical``: its best derivation (tropical determinisation, as the Cambridge HiFST tools do);
- ``log``: all derivations summed, i.e. cost = -log sum exp(-alpha * cost(d)) / alpha (log determinisation).

and the strings are either the whole lattice (``nbest=0``) or its K best unique strings under that same string
cost (the paper's accelerated system uses K = 200). The result is a lattice whose paths, each weighted by
exp(-cost), carry exactly that distribution (costs already multiplied by alpha), ready for
:func:`lattices.posteriors.forward_posteriors`.

For the full lattice in the log semiring no determinisation is needed: "contains u at least once" is a
property of the string, so the forward pass over all derivations already sums them.
"""
from __future__ import annotations

from lattices.determinize import SEMIRINGS, determinize
from lattices.lattice import Lattice, from_paths
from lattices.nbest import best_strings

__all__ = ["evidence_space", "nbest_strings"]


def nbest_strings(lattice: Lattice, k: int, semiring: str = "tropical",
                  alpha: float = 1.0) -> list[tuple[tuple[int, ...], float]]:
    """The K best unique strings with their alpha-scaled costs under the semiring, best first."""
    _check(semiring)
    return best_strings(determinize(lattice.scaled(alpha), semiring), k)


def evidence_space(lattice: Lattice, semiring: str = "tropical", alpha: float = 1.0, nbest: int = 0) -> Lattice:
    """A lattice (costs times alpha) whose path distribution is the evidence space's string distribution."""
    _check(semiring)
    if nbest < 0:
        raise ValueError(f"nbest must be 0 (full lattice) or positive, not {nbest}")
    scaled = lattice.scaled(alpha)
    if nbest:
        return from_paths(best_strings(determinize(scaled, semiring), nbest), lattice.symbols)
    if semiring == "tropical":
        return determinize(scaled, "tropical")
    return scaled


def _check(semiring: str) -> None:
    if semiring not in SEMIRINGS:
        raise ValueError(f"unknown semiring {semiring!r}: choose one of {SEMIRINGS}")
