"""Bounding the evidence space: beam pruning of a lattice, and the widest beam whose determinisation fits.

Tropical determinisation keeps one state per distinct set of (lattice state, residual cost) pairs a prefix can
reach, and on long sentences with many reorderings that set explodes: a KFTT lattice of 48,675 states
determinises to 5.7 million (3 GB in OpenFst; the forward pass over its n-gram histories took a 1000-sentence
run past 23 GB). The bound used here:

- the *margin* of an arc (or final state) is how much more than the lattice's best path the best complete path
  through it costs; ``prune(lattice, m)`` keeps the arcs and final states of margin <= m (OpenFst's ``prune``:
  every path within m of the best survives, and a path built from such arcs may cost a little more);
- :func:`determinize_within` determinises the whole lattice when the result has at most ``max_states`` states
  (the evidence space is unchanged), and otherwise the lattice pruned to the largest margin, among the arcs' own
  margins, whose determinisation fits (bisection; each step determinises a pruning within the budget, stopped
  past it, so no step costs more than ``max_states`` states; the last pruning that fitted is the result).

The margin chosen is returned with the lattice and recorded per sentence; ``inf`` means unpruned.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from lattices.lattice import INF, Lattice

__all__ = ["BoundedSpace", "arc_margins", "prune", "determinize_within"]

#: within(lattice, cap): the lattice determinised if that has at most cap states, else None (at no more than that).
DeterminizeWithin = Callable[[Lattice, int], "Lattice | None"]


@dataclass(frozen=True)
class BoundedSpace:
    """A determinised evidence space and the margin its lattice was pruned to (``inf``: not pruned)."""

    lattice: Lattice
    margin: float = math.inf

    @property
    def pruned(self) -> bool:
        return math.isfinite(self.margin)


def arc_margins(lattice: Lattice) -> tuple[np.ndarray, np.ndarray]:
    """([A] per arc, [S] per final state): the cost of the best complete path through it minus the best path's.

    States are topologically numbered and arcs sorted by source, so one pass forwards and one backwards settle
    the best cost from the start and to a final state of every state.
    """
    if lattice.num_states == 0:
        return np.zeros(0), np.zeros(0)
    forward = np.full(lattice.num_states, INF)
    backward = lattice.final.astype(np.float64).copy()
    forward[lattice.start] = 0.0
    arcs = list(zip(lattice.src.tolist(), lattice.dst.tolist(), lattice.cost.tolist()))
    for s, d, c in arcs:
        if forward[s] + c < forward[d]:
            forward[d] = forward[s] + c
    for s, d, c in reversed(arcs):
        if c + backward[d] < backward[s]:
            backward[s] = c + backward[d]
    best = backward[lattice.start]
    through_arc = forward[lattice.src] + lattice.cost + backward[lattice.dst] - best
    through_final = forward + lattice.final - best
    return np.maximum(through_arc, 0.0), np.maximum(through_final, 0.0)


def prune(lattice: Lattice, margin: float) -> Lattice:
    """The lattice without the arcs and final states whose best complete path costs more than best + margin."""
    if not margin >= 0:
        raise ValueError(f"the pruning margin must be non-negative, not {margin}")
    if lattice.num_states == 0:
        return lattice
    return _pruned(lattice, *arc_margins(lattice), margin)


def _pruned(lattice: Lattice, through_arc: np.ndarray, through_final: np.ndarray, margin: float) -> Lattice:
    return lattice.subset(through_arc <= margin, np.where(through_final <= margin, lattice.final, INF))


def determinize_within(lattice: Lattice, max_states: int, within: DeterminizeWithin,
                       determinize: Callable[[Lattice], Lattice]) -> BoundedSpace:
    """The determinised lattice if it has at most ``max_states`` states, else that of the widest pruning that fits.

    ``within(lattice, cap)``: the lattice determinised within ``cap`` states, or None; ``determinize(lattice)``:
    its deterministic equivalent, without a bound. ``max_states`` 0 means no bound. Raises ValueError when even the
    best paths alone (margin 0) do not fit.
    """
    if max_states < 0:
        raise ValueError(f"max_states must be 0 (no bound) or positive, not {max_states}")
    if not max_states:
        return BoundedSpace(determinize(lattice))
    whole = within(lattice, max_states)
    if whole is not None:
        return BoundedSpace(whole)
    through_arc, through_final = arc_margins(lattice)
    candidates = np.unique(np.concatenate([through_arc, through_final[np.isfinite(through_final)]]))
    lo, hi, fitted = -1, len(candidates) - 1, None   # candidates[hi] keeps everything: it does not fit
    while hi - lo > 1:
        mid = (lo + hi) // 2
        result = within(_pruned(lattice, through_arc, through_final, float(candidates[mid])), max_states)
        if result is not None:
            lo, fitted = mid, result
        else:
            hi = mid
    if fitted is None:
        raise ValueError(f"even the best paths of the lattice ({lattice.num_states} states) determinise to more "
                         f"than {max_states} states: raise the bound")
    return BoundedSpace(fitted, float(candidates[lo]))
