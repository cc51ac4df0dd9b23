"""Phrase-pair extraction consistent with a word alignment (Koehn, Och & Marcu 2003; Moses' extract).

A pair of spans (source i1..i2, target j1..j2) is consistent when at least one link lies inside it and no link
leaves it: every link of a source word inside goes to a target word inside and vice versa. Unaligned source
words at the borders extend a pair in every combination; unaligned target words at the borders are covered by
enumerating every target span. Both sides are at most ``max_length`` words.
"""
from __future__ import annotations

import bisect
from typing import Iterator, Sequence

from pipeline.smt.reordering import extraction_orientations

Span = tuple[int, int, int, int]  # source start, source end, target start, target end (inclusive)


def extract_spans(src_len: int, tgt_len: int, links: Sequence[tuple[int, int]], max_length: int = 7) -> list[Span]:
    """Every consistent phrase pair of one sentence pair, as inclusive spans, in Moses' enumeration order."""
    by_src: list[list[int]] = [[] for _ in range(src_len)]
    by_tgt: list[list[int]] = [[] for _ in range(tgt_len)]
    for i, j in links:
        if not (0 <= i < src_len and 0 <= j < tgt_len):
            raise ValueError(f"link {i}-{j} outside a {src_len}x{tgt_len} sentence pair")
        by_src[i].append(j)
        by_tgt[j].append(i)
    spans: list[Span] = []
    for j1 in range(tgt_len):
        i_min, i_max = src_len, -1
        for j2 in range(j1, min(tgt_len, j1 + max_length)):
            for i in by_tgt[j2]:
                i_min, i_max = min(i_min, i), max(i_max, i)
            if i_max < 0:
                continue  # nothing aligned yet
            if i_max - i_min + 1 > max_length:
                break  # widening the target side only widens the source side
            if any(not j1 <= j <= j2 for i in range(i_min, i_max + 1) for j in by_src[i]):
                continue
            i1 = i_min
            while True:  # extend over unaligned source words on both sides
                i2 = i_max
                while True:
                    spans.append((i1, i2, j1, j2))
                    i2 += 1
                    if i2 >= src_len or by_src[i2] or i2 - i1 + 1 > max_length:
                        break
                i1 -= 1
                if i1 < 0 or by_src[i1] or i_max - i1 + 1 > max_length:
                    break
    return spans


def extract_pairs(src: Sequence[str], tgt: Sequence[str], links: Sequence[tuple[int, int]],
                  max_length: int = 7, orientations: bool = False) -> Iterator[tuple[str, ...]]:
    """(source phrase, target phrase, local alignment ``"i-j ..."``) of every consistent pair of a sentence pair;
    with ``orientations``, a fourth item: its backward and forward orientation letters (pipeline.smt.reordering)."""
    link_set = sorted(set(links))
    aligned = set(link_set) if orientations else set()
    # A consistent pair holds exactly the links of its source words, a run of link_set: first_link[i] is where
    # source word i's links start.
    first_link = [bisect.bisect_left(link_set, (i,)) for i in range(len(src) + 1)]
    for i1, i2, j1, j2 in extract_spans(len(src), len(tgt), link_set, max_length):
        local = " ".join(f"{i - i1}-{j - j1}" for i, j in link_set[first_link[i1]:first_link[i2 + 1]])
        if orientations:
            letters = extraction_orientations(aligned, len(src), len(tgt), (i1, i2, j1, j2))
            yield " ".join(src[i1:i2 + 1]), " ".join(tgt[j1:j2 + 1]), local, letters
        else:
            yield " ".join(src[i1:i2 + 1]), " ".join(tgt[j1:j2 + 1]), local
