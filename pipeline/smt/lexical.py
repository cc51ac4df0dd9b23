"""Word translation tables from a word-aligned corpus, and the lexical weights of phrase pairs.

w(e|f) = c(f, e) / c(f) and w(f|e) = c(f, e) / c(e), counting every alignment link, an unaligned source word as
aligned to NULL and an unaligned target word as aligned from NULL (Koehn et al. 2003). The lexical weight of a
phrase pair with alignment a:

    lex(e|f, a) = prod_j  mean_{i: (i, j) in a} w(e_j | f_i)     (w(e_j | NULL) when e_j is unaligned)

and lex(f|e, a) the same the other way round. ``LexicalTable.weights`` computes it from the counts;
``LexicalWeigher`` gives the same floats for millions of pairs (the scoring pass of a phrase table), from
probabilities divided once and each distinct alignment string parsed once.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

NULL = "NULL"


@dataclass
class LexicalTable:
    """Word translation probabilities both ways, counted from an aligned corpus."""

    joint: Counter = field(default_factory=Counter)  # (f, e) -> count; NULL on either side
    source: Counter = field(default_factory=Counter)  # f -> count
    target: Counter = field(default_factory=Counter)  # e -> count

    def add(self, src: Sequence[str], tgt: Sequence[str], links: Iterable[tuple[int, int]]) -> None:
        """Count the links of one sentence pair."""
        src_aligned, tgt_aligned = set(), set()
        for i, j in links:
            self._count(src[i], tgt[j])
            src_aligned.add(i)
            tgt_aligned.add(j)
        for i, f in enumerate(src):
            if i not in src_aligned:
                self._count(f, NULL)
        for j, e in enumerate(tgt):
            if j not in tgt_aligned:
                self._count(NULL, e)

    def _count(self, f: str, e: str) -> None:
        self.joint[f, e] += 1
        self.source[f] += 1
        self.target[e] += 1

    def e_given_f(self, e: str, f: str) -> float:
        return self.joint[f, e] / self.source[f]

    def f_given_e(self, f: str, e: str) -> float:
        return self.joint[f, e] / self.target[e]

    def weights(self, src: Sequence[str], tgt: Sequence[str], links: Sequence[tuple[int, int]]) -> tuple[float, float]:
        """(lex(f|e), lex(e|f)) of a phrase pair with local alignment ``links``."""
        by_src: list[list[int]] = [[] for _ in src]
        by_tgt: list[list[int]] = [[] for _ in tgt]
        for i, j in links:
            by_src[i].append(j)
            by_tgt[j].append(i)
        lex_ef = 1.0
        for j, e in enumerate(tgt):
            aligned = by_tgt[j]
            lex_ef *= (sum(self.e_given_f(e, src[i]) for i in aligned) / len(aligned) if aligned
                       else self.e_given_f(e, NULL))
        lex_fe = 1.0
        for i, f in enumerate(src):
            aligned = by_src[i]
            lex_fe *= (sum(self.f_given_e(f, tgt[j]) for j in aligned) / len(aligned) if aligned
                       else self.f_given_e(f, NULL))
        return lex_fe, lex_ef


class _Ratios(dict):
    """{(f, e): probability}, divided once; a pair never counted falls back to the table's own ratio (0)."""

    def __init__(self, values: dict, fallback: Callable[[str, str], float]) -> None:
        super().__init__(values)
        self.fallback = fallback

    def __missing__(self, key: tuple[str, str]) -> float:
        return self.fallback(*key)


# Per target word, the source positions linked to it (in the alignment string's order); and the same per source word.
Shape = tuple[tuple[tuple[int, ...], ...], tuple[tuple[int, ...], ...]]
MAX_SHAPES = 1_000_000  # distinct alignment strings kept parsed (66,737 for eng-ger's 5.1M phrase pairs: medium)


class LexicalWeigher:
    """``LexicalTable.weights`` for many pairs, to the same float: the same products and sums in the same order."""

    def __init__(self, table: LexicalTable) -> None:
        self.e_given_f = _Ratios({k: c / table.source[k[0]] for k, c in table.joint.items()},
                                 lambda f, e: table.e_given_f(e, f))
        self.f_given_e = _Ratios({k: c / table.target[k[1]] for k, c in table.joint.items()}, table.f_given_e)
        self.shapes: dict[tuple[str, int, int], Shape] = {}

    def shape(self, alignment: str, src_len: int, tgt_len: int) -> Shape:
        key = (alignment, src_len, tgt_len)
        found = self.shapes.get(key)
        if found is None:
            if len(self.shapes) >= MAX_SHAPES:
                self.shapes.clear()
            by_src: list[list[int]] = [[] for _ in range(src_len)]
            by_tgt: list[list[int]] = [[] for _ in range(tgt_len)]
            for link in alignment.split():
                i, _, j = link.partition("-")
                by_src[int(i)].append(int(j))
                by_tgt[int(j)].append(int(i))
            found = self.shapes[key] = (tuple(map(tuple, by_tgt)), tuple(map(tuple, by_src)))
        return found

    def weights(self, src: Sequence[str], tgt: Sequence[str], alignment: str) -> tuple[float, float]:
        """(lex(f|e), lex(e|f)) of a phrase pair with local alignment ``"i-j ..."``."""
        by_tgt, by_src = self.shape(alignment, len(src), len(tgt))
        e_given_f, f_given_e = self.e_given_f, self.f_given_e
        lex_ef = 1.0
        for e, aligned in zip(tgt, by_tgt):
            if len(aligned) == 1:  # sum([x]) / 1 == x
                lex_ef *= e_given_f[src[aligned[0]], e]
            elif aligned:
                lex_ef *= sum(e_given_f[src[i], e] for i in aligned) / len(aligned)
            else:
                lex_ef *= e_given_f[NULL, e]
        lex_fe = 1.0
        for f, aligned in zip(src, by_src):
            if len(aligned) == 1:
                lex_fe *= f_given_e[f, tgt[aligned[0]]]
            elif aligned:
                lex_fe *= sum(f_given_e[f, tgt[j]] for j in aligned) / len(aligned)
            else:
                lex_fe *= f_given_e[f, NULL]
        return lex_fe, lex_ef
