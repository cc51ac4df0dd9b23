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
    """The MBR string of the acceptor under L (see the module docstring); None when nothing is accepted.

    Vectorised by levels: a state's level is the length of the longest string reaching it, so every arc goes to a
    higher level and the states of one level can be settled together. At each level the candidate pairs
    (state, row) are reduced to the best gain per pair (earlier candidates win ties), the final states are scored,
    and every kept pair is extended by all the arcs of its state at once (one lookup each for L[row, label] and the
    next row). A kept pair remembers its token and the pair it extends, to read the best string back."""
    if acceptor.shortest() is None:
        return None
    automaton = matrix.automaton
    level = _levels(acceptor)
    out_start = np.searchsorted(acceptor.arc_src, np.arange(acceptor.num_states), "left")
    out_count = np.searchsorted(acceptor.arc_src, np.arange(acceptor.num_states), "right") - out_start
    # candidates waiting for their level: (states, rows, gains, parents, tokens)
    pending: dict[int, list[tuple[np.ndarray, ...]]] = {0: [(np.zeros(1, np.int64),
                                                             np.asarray([automaton.next_row(0, bos_id)], np.int64),
                                                             np.zeros(1), np.full(1, -1, np.int64),
                                                             np.full(1, -1, np.int64))]}
    kept_token: list[np.ndarray] = []
    kept_parent: list[np.ndarray] = []
    count, best_gain, best_pair = 0, -np.inf, -1
    for depth in range(int(level.max()) + 1):
        parts = pending.pop(depth, None)
        if not parts:
            continue
        states, rows, gains, parents, tokens = (np.concatenate(column) for column in zip(*parts))
        order = np.lexsort((-gains, rows, states))       # by pair, the best gain first; stable for ties
        first = np.ones(order.size, bool)
        first[1:] = (states[order[1:]] != states[order[:-1]]) | (rows[order[1:]] != rows[order[:-1]])
        pick = order[first]
        states, rows, gains = states[pick], rows[pick], gains[pick]
        ids = np.arange(count, count + pick.size)
        kept_token.append(tokens[pick])
        kept_parent.append(parents[pick])
        count += pick.size
        ends = acceptor.final[states]
        if ends.any():
            total = gains[ends] + matrix.values(rows[ends], np.full(int(ends.sum()), eos_id)).astype(np.float64)
            k = int(np.argmax(total))
            if total[k] > best_gain:
                best_gain, best_pair = float(total[k]), int(ids[ends][k])
        counts = out_count[states]
        if not counts.any():
            continue
        pair = np.repeat(np.arange(states.size), counts)   # every kept pair with every arc of its state
        arcs = np.repeat(out_start[states] - np.cumsum(counts) + counts, counts) + np.arange(pair.size)
        labels, targets = acceptor.arc_label[arcs], acceptor.arc_dst[arcs]
        extended = gains[pair] + matrix.values(rows[pair], labels).astype(np.float64)
        next_rows = automaton.next_rows(rows[pair], labels)
        target_level = level[targets]
        for depth_to in np.unique(target_level).tolist():
            sel = target_level == depth_to
            pending.setdefault(depth_to, []).append((targets[sel], next_rows[sel], extended[sel], ids[pair[sel]],
                                                     labels[sel]))
    if best_pair < 0:
        return None
    token_of, parent_of = np.concatenate(kept_token), np.concatenate(kept_parent)
    string, pair_id = [], best_pair
    while parent_of[pair_id] >= 0:
        string.append(int(token_of[pair_id]))
        pair_id = int(parent_of[pair_id])
    return MbrResult(tuple(string[::-1]), best_gain)


def _levels(acceptor: Acceptor) -> np.ndarray:
    """[Q] a level per state with every arc going to a higher level: the longest path from any state without
    incoming arcs (the start, and unreachable states that only push levels up), by Kahn's algorithm."""
    n = acceptor.num_states
    successors: list[list[int]] = [[] for _ in range(n)]
    indegree = [0] * n
    for s, d in zip(acceptor.arc_src.tolist(), acceptor.arc_dst.tolist()):
        successors[s].append(d)
        indegree[d] += 1
    level = [0] * n
    ready = [q for q in range(n) if indegree[q] == 0]
    while ready:
        q = ready.pop()
        for d in successors[q]:
            if level[q] + 1 > level[d]:
                level[d] = level[q] + 1
            indegree[d] -= 1
            if indegree[d] == 0:
                ready.append(d)
    return np.asarray(level, np.int64)
