"""Symmetrisation of two directional word alignments: grow-diag-final-and (Koehn et al. 2005).

As in the Moses documentation's pseudo-code (English e = target position j, foreign f = source position i):

    alignment = intersection(forward, reverse)
    GROW-DIAG: repeat until nothing is added: for e = 0..., for f = 0...: if (f, e) is aligned (checked live, so
      points added earlier in the same sweep count), for every neighbour (f', e') of the 8 around it, in the
      order left, up, right, down, then the diagonals: if f' or e' is not aligned yet and (f', e') is in the
      union, add it
    FINAL-AND(forward); FINAL-AND(reverse): for e = 0..., for f = 0...: add (f, e) if it is in that direction
      and neither f nor e is aligned yet

Points are (source position, target position).
"""
from __future__ import annotations

from typing import Iterable

NEIGHBOURS = ((-1, 0), (0, -1), (1, 0), (0, 1), (-1, -1), (-1, 1), (1, -1), (1, 1))


def grow_diag_final_and(forward: Iterable[tuple[int, int]],
                        reverse: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """The grow-diag-final-and symmetrisation of two alignments of one sentence pair, sorted."""
    fwd, rev = set(forward), set(reverse)
    union = fwd | rev
    alignment = fwd & rev
    src_aligned = {i for i, _ in alignment}
    tgt_aligned = {j for _, j in alignment}

    def add(i: int, j: int) -> None:
        alignment.add((i, j))
        src_aligned.add(i)
        tgt_aligned.add(j)

    if not union:
        return []
    src_len = max(i for i, _ in union) + 1
    tgt_len = max(j for _, j in union) + 1
    added = True
    while added:  # GROW-DIAG
        added = False
        for j in range(tgt_len):
            for i in range(src_len):
                if (i, j) not in alignment:
                    continue
                for dj, di in NEIGHBOURS:
                    point = (i + di, j + dj)
                    if point in union and point not in alignment and (
                            point[0] not in src_aligned or point[1] not in tgt_aligned):
                        add(*point)
                        added = True
    for direction in (fwd, rev):  # FINAL-AND
        for i, j in sorted(direction, key=lambda p: (p[1], p[0])):
            if i not in src_aligned and j not in tgt_aligned:
                add(i, j)
    return sorted(alignment)
