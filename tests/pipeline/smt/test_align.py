from collections import Counter

from pipeline.smt.align import align, format_links, parse_links
from pipeline.smt.symmetrize import grow_diag_final_and
from tests.conftest import sentence_pairs


def test_links_parse_and_format():
    assert parse_links("0-0 2-1 1-3") == [(0, 0), (2, 1), (1, 3)]
    assert format_links([(2, 1), (0, 0)]) == "0-0 2-1" and parse_links("") == []


def test_eflomal_aligns_a_small_grammar_both_ways():
    pairs = sentence_pairs(300, seed=4)
    src = [d.replace(".", " .").replace("!", " !").replace(",", " ,") for _, d in pairs]
    tgt = [e.replace(".", " .").replace("!", " !").replace(",", " ,") for e, _ in pairs]
    forward, reverse = align(src, tgt)
    assert len(forward) == len(reverse) == 300
    hits = Counter()
    for s, t, f, r in zip(src, tgt, forward, reverse):
        s, t = s.split(), t.split()
        links = grow_diag_final_and(f, r)
        assert all(0 <= i < len(s) and 0 <= j < len(t) for i, j in f + r)
        for i, j in links:
            if s[i] == "Haus":
                hits[t[j]] += 1
    assert hits.most_common(1)[0][0] == "house"
    assert hits["house"] >= 0.9 * sum(hits.values())
