"""Lattice MBR (Tromble et al. 2008): the string of the evidence space with the highest expected linear gain.

    y^ = argmax_{y in E}  sum_t L[h_t, y_t] + L[h_T, </s>]        (ALGORITHMS.md sections 1 and 4)

the LMBR score of the paper's rule without the NMT model (lambda = 0), where h_t is the row of the history
<s> y_1..y_{t-1} (lattices/row_automaton.py): Tromble et al.'s linear gain, which counts every occurrence of an
n-gram. The hypothesis space is the acceptor of the same evidence space (lattices/acceptor.py), and the search is
exact: a dynamic program over pairs (acceptor state, row of L) in topological order (the row is a function of the
last order - 1 tokens, so a pair holds everything the future gains depend on).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lattices.acceptor import Acceptor
from lattices.lmatrix import LMatrix

__all__ = ["MbrResult", "lattice_mbr"]


@dataclass(frozen=True)
class MbrResult:
    tokens: tuple[int, ...]
    gain: float


def lattice_mbr(acceptor: Acceptor, matrix: LMatrix, bos_id: int, eos_id: int) -> MbrResult | None:
    """The MBR string of the acceptor under L (see the module docstring); None when nothing is accepted."""
    if acceptor.shortest() is None:
        return None
    automaton = matrix.automaton
    rows: dict[int, np.ndarray] = {}

    def gain(row: int, token: int) -> float:
        """L[row, token]: the expected gain of appending the token to a history of that row."""
        if row not in rows:
            rows[row] = matrix.dense_rows([row])[0].astype(np.float64)
        return float(rows[row][token])

    start_row = automaton.next_row(0, bos_id)
    # best[state][row] = (gain so far, tokens)
    best: dict[int, dict[int, tuple[float, tuple[int, ...]]]] = {0: {start_row: (0.0, ())}}
    result: MbrResult | None = None
    for state in _topological_order(acceptor):
        entries = best.pop(state, {})
        lo = np.searchsorted(acceptor.arc_src, state, "left")
        hi = np.searchsorted(acceptor.arc_src, state, "right")
        for row, (score, tokens) in sorted(entries.items()):
            if acceptor.final[state]:
                total = score + gain(row, eos_id)
                if result is None or total > result.gain:
                    result = MbrResult(tokens, total)
            for k in range(lo, hi):
                token, nxt = int(acceptor.arc_label[k]), int(acceptor.arc_dst[k])
                candidate = (score + gain(row, token), tokens + (token,))
                slot = best.setdefault(nxt, {})
                new_row = automaton.next_row(row, token)
                if new_row not in slot or candidate[0] > slot[new_row][0]:
                    slot[new_row] = candidate
    return result


def _topological_order(acceptor: Acceptor) -> list[int]:
    indegree = np.bincount(acceptor.arc_dst, minlength=acceptor.num_states)
    order, ready = [], [0] if indegree[0] == 0 else []
    while ready:
        q = ready.pop()
        order.append(q)
        lo = np.searchsorted(acceptor.arc_src, q, "left")
        hi = np.searchsorted(acceptor.arc_src, q, "right")
        for d in acceptor.arc_dst[lo:hi].tolist():
            indegree[d] -= 1
            if indegree[d] == 0:
                ready.append(d)
    return order
