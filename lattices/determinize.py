"""Weighted determinisation of an acyclic lattice in float64, in the tropical or the log semiring.

- ``tropical``: each string keeps the cost of its best derivation (what the Cambridge HiFST tools do);
- ``log``: each string's cost is -log of the sum over its derivations of exp(-cost).

pynini would do this too, but OpenFst has no float64 tropical arc type and its float32 sums drift by about 1e-6;
this subset construction keeps every weight in float64. Epsilons are removed on the way (each subset is closed
under epsilon arcs), so the result is epsilon-free and deterministic: one path per string. Costs are taken as
given: apply the path scale alpha before a log determinisation (sums of exp(-alpha * cost)).
"""
from __future__ import annotations

import heapq
import math
from typing import Callable

from lattices.lattice import INF, Lattice

__all__ = ["SEMIRINGS", "determinize", "combine_costs"]

SEMIRINGS = ("tropical", "log")

#: Residual costs are compared at this resolution when deciding whether two subsets are the same state.
_KEY_RESOLUTION = 1e-12


def _log_plus(a: float, b: float) -> float:
    """-log(exp(-a) + exp(-b)), stable."""
    if a == INF:
        return b
    if b == INF:
        return a
    lo, hi = (a, b) if a < b else (b, a)
    return lo - math.log1p(math.exp(lo - hi))


def combine_costs(semiring: str) -> Callable[[float, float], float]:
    """The semiring's plus on costs: min (tropical) or -log(exp(-a) + exp(-b)) (log)."""
    if semiring == "tropical":
        return min
    if semiring == "log":
        return _log_plus
    raise ValueError(f"unknown semiring {semiring!r}: choose one of {SEMIRINGS}")


def determinize(lattice: Lattice, semiring: str, max_states: int = 0) -> Lattice | None:
    """An equivalent deterministic, epsilon-free lattice (string -> cost function kept, in float64).

    With ``max_states`` > 0, None as soon as the result would have more states than that.
    """
    plus = combine_costs(semiring)
    if lattice.num_states == 0:
        return Lattice.empty(lattice.symbols)
    out = lattice.out_arcs()
    eps = [[(d, c) for x, d, c in arcs if x == 0] for arcs in out]
    lab = [[(x, d, c) for x, d, c in arcs if x != 0] for arcs in out]
    final = lattice.final.tolist()

    def closure(members: dict[int, float]) -> dict[int, float]:
        # states are topologically numbered, so one pass in increasing order settles every epsilon path
        heap = list(members)
        heapq.heapify(heap)
        seen = set(heap)
        while heap:
            q = heapq.heappop(heap)
            for d, c in eps[q]:
                w = members[q] + c
                members[d] = plus(members[d], w) if d in members else w
                if d not in seen:
                    seen.add(d)
                    heapq.heappush(heap, d)
        return members

    def key(members: dict[int, float]) -> tuple:
        return tuple(sorted((q, round(r / _KEY_RESOLUTION)) for q, r in members.items()))

    start = closure({lattice.start: 0.0})
    subsets: list[dict[int, float]] = [start]
    index = {key(start): 0}
    arcs: list[tuple[int, int, int, float]] = []
    finals: dict[int, float] = {}
    i = 0
    while i < len(subsets):
        members = subsets[i]
        fw = INF
        moves: dict[int, dict[int, float]] = {}
        for q, r in members.items():
            if final[q] != INF:
                fw = plus(fw, r + final[q])
            for x, d, c in lab[q]:
                target = moves.setdefault(x, {})
                w = r + c
                target[d] = plus(target[d], w) if d in target else w
        if fw != INF:
            finals[i] = fw
        for x in sorted(moves):
            target = closure(moves[x])
            m = INF
            for w in target.values():
                m = plus(m, w)
            residual = {q: w - m for q, w in target.items()}
            k = key(residual)
            j = index.get(k)
            if j is None:
                j = len(subsets)
                if max_states and j >= max_states:
                    return None
                index[k] = j
                subsets.append(residual)
            arcs.append((i, j, x, m))
        i += 1
    return Lattice.from_arcs(len(subsets), 0, arcs, finals, lattice.symbols)
