"""An acyclic weighted acceptor held as numpy arrays, with float64 costs: the working form of every lattice here.

pynini FSTs keep float32 weights (arc type ``standard``) and print weights with 9 significant digits; the
posterior code wants float64 and fast array access, so a lattice is read once into a :class:`Lattice`:

- states ``0 .. num_states-1`` numbered in topological order (every arc goes from a lower to a higher state),
  trimmed to the states on some complete path (an n-gram on a dead end is not in the evidence space);
- arcs as parallel arrays ``src``, ``dst``, ``label`` (0 = epsilon), ``cost`` (float64, -log weight);
- ``final`` costs per state (``inf`` = not final).

Costs are in the units of the source FST (minus the log-linear score); the path scale alpha is applied with
:meth:`Lattice.scaled`. ``symbols`` optionally maps labels to strings (the FST's symbol table).
"""
from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Iterator, Mapping, Sequence

import numpy as np

from lattices.fst_binary import arrays_from_fst, fst_from_arrays

__all__ = ["Lattice", "weight_to_float", "from_paths"]

INF = math.inf


def weight_to_float(weight, arc_type: str) -> float:
    """The exact value of a pynini weight as a Python float.

    ``float(weight)`` goes through a 9-digit string: exact for float32 weights (standard, log) once rounded back
    to float32, but not for log64, whose residual is read back a second time (value = approx + (w - approx)).
    """
    import pynini

    approx = float(weight)
    if math.isinf(approx) or math.isnan(approx):
        return approx
    if arc_type in ("standard", "log"):
        return float(np.float32(approx))
    semiring = "tropical" if arc_type == "standard" else arc_type
    residual = float(pynini.times(weight, pynini.Weight(semiring, -approx)))
    return approx + residual


@dataclass
class Lattice:
    """Topologically sorted, trimmed acyclic acceptor. Build with :meth:`from_arcs` (which sorts and trims)."""

    num_states: int
    start: int
    src: np.ndarray
    dst: np.ndarray
    label: np.ndarray
    cost: np.ndarray
    final: np.ndarray
    symbols: Mapping[int, str] | None = field(default=None, repr=False)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_arcs(cls, num_states: int, start: int, arcs: Sequence[tuple[int, int, int, float]],
                  finals: Mapping[int, float], symbols: Mapping[int, str] | None = None) -> "Lattice":
        """Arcs as (src, dst, label, cost); finals as {state: final cost}. Sorts topologically and trims.

        Raises ValueError for a cyclic lattice. Arcs with infinite cost are dropped. An empty result (no
        complete path) is a lattice with no states (``num_states == 0``, ``start == -1``).
        """
        a = np.asarray(arcs, dtype=np.float64).reshape(-1, 4)
        keep = np.isfinite(a[:, 3])
        a = a[keep]
        src, dst = a[:, 0].astype(np.int64), a[:, 1].astype(np.int64)
        label, cost = a[:, 2].astype(np.int64), a[:, 3].copy()
        final = np.full(num_states, INF)
        for q, w in finals.items():
            final[q] = w
        return cls._sorted_trimmed(num_states, start, src, dst, label, cost, final, symbols)

    @classmethod
    def _sorted_trimmed(cls, n: int, start: int, src: np.ndarray, dst: np.ndarray, label: np.ndarray,
                        cost: np.ndarray, final: np.ndarray, symbols) -> "Lattice":
        if n == 0 or start < 0:
            return cls.empty(symbols)
        # accessible (forward) and coaccessible (backward) states
        out_lists: list[list[int]] = [[] for _ in range(n)]
        in_lists: list[list[int]] = [[] for _ in range(n)]
        for i, (s, d) in enumerate(zip(src.tolist(), dst.tolist())):
            out_lists[s].append(i)
            in_lists[d].append(i)
        acc = np.zeros(n, bool)
        stack = [start]
        acc[start] = True
        while stack:
            q = stack.pop()
            for i in out_lists[q]:
                d = int(dst[i])
                if not acc[d]:
                    acc[d] = True
                    stack.append(d)
        coacc = np.isfinite(final) & acc
        stack = list(np.flatnonzero(coacc))
        while stack:
            q = stack.pop()
            for i in in_lists[q]:
                s = int(src[i])
                if acc[s] and not coacc[s]:
                    coacc[s] = True
                    stack.append(s)
        if not coacc[start]:
            return cls.empty(symbols)
        alive = coacc
        # Kahn's algorithm over live states; a state left over is on a cycle
        keep_arc = alive[src] & alive[dst]
        indeg = np.bincount(dst[keep_arc], minlength=n)
        order: list[int] = []
        ready = deque([start] if indeg[start] == 0 else [])
        indeg = indeg.tolist()
        while ready:  # first in, first out: a breadth-first numbering keeps the forward pass's frontier small
            q = ready.popleft()
            order.append(q)
            for i in out_lists[q]:
                if keep_arc[i]:
                    d = int(dst[i])
                    indeg[d] -= 1
                    if indeg[d] == 0:
                        ready.append(d)
        if len(order) != int(alive.sum()):
            raise ValueError("the lattice is cyclic (or has an unreachable cycle through the start state)")
        new_id = np.full(n, -1, np.int64)
        new_id[np.asarray(order, np.int64)] = np.arange(len(order))
        src2, dst2 = new_id[src[keep_arc]], new_id[dst[keep_arc]]
        arc_order = np.lexsort((dst2, src2))
        final2 = np.full(len(order), INF)
        final2[new_id[alive]] = final[alive]
        return cls(len(order), 0, src2[arc_order], dst2[arc_order], label[keep_arc][arc_order],
                   cost[keep_arc][arc_order], final2, symbols)

    @classmethod
    def empty(cls, symbols: Mapping[int, str] | None = None) -> "Lattice":
        z = np.zeros(0, np.int64)
        return cls(0, -1, z, z.copy(), z.copy(), np.zeros(0), np.zeros(0), symbols)

    @classmethod
    def from_fst(cls, fst) -> "Lattice":
        """Read a pynini acceptor (arc types standard, log, log64); its input symbol table becomes ``symbols``.

        Trimming and topological sorting run in OpenFst (C++); states keep OpenFst's topological numbering.
        """
        import pynini

        table = fst.input_symbols()
        symbols = {k: v for k, v in table} if table is not None else None
        fst = fst.copy()
        fst.set_input_symbols(None)
        fst.set_output_symbols(None)
        fst.connect()
        if fst.num_states() and fst.properties(pynini.ACYCLIC, True) != pynini.ACYCLIC:
            raise ValueError("the lattice is cyclic (or has an unreachable cycle through the start state)")
        fst.topsort()
        n, start, src, dst, ilabel, olabel, cost, final = arrays_from_fst(fst)
        differ = np.flatnonzero(ilabel != olabel)
        if differ.size:
            i = int(differ[0])
            raise ValueError(f"not an acceptor: arc {src[i]}->{dst[i]} has labels {ilabel[i]}:{olabel[i]}")
        keep = np.isfinite(cost)
        if n == 0 or start != 0 or not keep.all():  # (connect drops infinite-cost arcs' dead ends only)
            return cls._sorted_trimmed(n, start, src[keep], dst[keep], ilabel[keep], cost[keep], final, symbols)
        order = np.lexsort((dst, src))
        return cls(n, 0, src[order], dst[order], ilabel[order], cost[order], final, symbols)

    def subset(self, keep_arcs: np.ndarray, final: np.ndarray) -> "Lattice":
        """The lattice with only the arcs where ``keep_arcs`` is True and these final costs, sorted and trimmed."""
        return self._sorted_trimmed(self.num_states, self.start, self.src[keep_arcs], self.dst[keep_arcs],
                                    self.label[keep_arcs], self.cost[keep_arcs], final, self.symbols)

    def to_fst(self, arc_type: str = "log64"):
        """A pynini acceptor with these costs as weights (float64 kept exactly in ``log64``)."""
        return fst_from_arrays(self.num_states, self.start, self.src, self.dst, self.label, self.cost, self.final,
                               arc_type)

    # ------------------------------------------------------------------ views
    @property
    def num_arcs(self) -> int:
        return int(self.src.shape[0])

    def scaled(self, alpha: float) -> "Lattice":
        """Costs multiplied by the path scale alpha (P(path) proportional to exp(-alpha * cost))."""
        if not alpha > 0:
            raise ValueError(f"the path scale alpha must be positive, not {alpha}")
        return Lattice(self.num_states, self.start, self.src, self.dst, self.label, self.cost * alpha,
                       self.final * alpha, self.symbols)

    def out_arcs(self) -> list[list[tuple[int, int, float]]]:
        """Per state, its outgoing arcs as (label, dst, cost)."""
        out: list[list[tuple[int, int, float]]] = [[] for _ in range(self.num_states)]
        for s, d, x, c in zip(self.src.tolist(), self.dst.tolist(), self.label.tolist(), self.cost.tolist()):
            out[s].append((x, d, c))
        return out

    def tokens(self) -> set[int]:
        """The non-epsilon labels that occur."""
        return set(np.unique(self.label[self.label != 0]).tolist())

    def paths(self, limit: int = 1_000_000) -> Iterator[tuple[tuple[int, ...], float]]:
        """Every complete path as (labels without epsilons, total cost). For tests and small lattices only."""
        if self.num_states == 0:
            return
        out = self.out_arcs()
        stack: list[tuple[int, tuple[int, ...], float]] = [(self.start, (), 0.0)]
        count = 0
        while stack:
            q, labels, cost = stack.pop()
            if math.isfinite(self.final[q]):
                count += 1
                if count > limit:
                    raise ValueError(f"more than {limit} paths")
                yield labels, cost + float(self.final[q])
            for x, d, c in out[q]:
                stack.append((d, labels + (x,) if x else labels, cost + c))


def from_paths(strings: Sequence[tuple[Sequence[int], float]], symbols: Mapping[int, str] | None = None) -> Lattice:
    """A deterministic prefix tree accepting exactly the given strings, each with its cost as final cost.

    Strings must be distinct (an n-best list of unique strings); the empty string is allowed.
    """
    children: list[dict[int, int]] = [{}]
    final: dict[int, float] = {}
    arcs: list[tuple[int, int, int, float]] = []
    for labels, cost in strings:
        q = 0
        for x in labels:
            nxt = children[q].get(x)
            if nxt is None:
                nxt = len(children)
                children.append({})
                children[q][x] = nxt
                arcs.append((q, nxt, int(x), 0.0))
            q = nxt
        if q in final:
            raise ValueError(f"duplicate string {tuple(labels)} in an n-best list of unique strings")
        final[q] = float(cost)
    return Lattice.from_arcs(len(children), 0, arcs, final, symbols)
