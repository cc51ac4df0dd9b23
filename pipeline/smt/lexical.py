"""Word translation tables from a word-aligned corpus, and the lexical weights of phrase pairs.

w(e|f) = c(f, e) / c(f) and w(f|e) = c(f, e) / c(e), counting every alignment link, an unaligned source word as
aligned to NULL and an unaligned target word as aligned from NULL (Koehn et al. 2003). The lexical weight of a
phrase pair with alignment a:

    lex(e|f, a) = prod_j  mean_{i: (i, j) in a} w(e_j | f_i)     (w(e_j | NULL) when e_j is unaligned)

and lex(f|e, a) the same the other way round.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, Sequence

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
