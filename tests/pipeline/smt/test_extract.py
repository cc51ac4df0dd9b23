import pytest

from pipeline.smt.extract import extract_pairs, extract_spans


def pairs(src, tgt, links, max_length=7):
    return sorted((f, e) for f, e, _ in extract_pairs(src.split(), tgt.split(), links, max_length))


def test_unaligned_words_on_both_sides():
    # A-x and C-z aligned; B (source) and y (target) unaligned
    got = pairs("A B C", "x y z", [(0, 0), (2, 2)])
    assert got == sorted([("A", "x"), ("A B", "x"), ("A", "x y"), ("A B", "x y"), ("A B C", "x y z"),
                          ("C", "y z"), ("B C", "y z"), ("C", "z"), ("B C", "z")])
    assert ("B", "y") not in got  # a pair needs at least one link


def test_inconsistent_boxes_are_skipped():
    # f0 -> e0, e1 and f1 -> e1: only the whole box is consistent
    assert pairs("f0 f1", "e0 e1", [(0, 0), (0, 1), (1, 1)]) == [("f0 f1", "e0 e1")]


def test_reordering_and_the_local_alignment():
    got = list(extract_pairs("das Haus klein".split(), "the small house".split(), [(0, 0), (1, 2), (2, 1)]))
    assert ("Haus klein", "small house", "0-1 1-0") in got
    assert ("das Haus klein", "the small house", "0-0 1-2 2-1") in got
    assert ("das Haus", "the small house") not in [(f, e) for f, e, _ in got]  # klein aligns inside
    assert sorted((f, e) for f, e, _ in got) == sorted([
        ("das", "the"), ("Haus", "house"), ("klein", "small"), ("Haus klein", "small house"),
        ("das Haus klein", "the small house")])


def test_maximum_phrase_length_on_both_sides():
    links = [(0, 0), (2, 2)]
    assert ("A B C", "x y z") not in pairs("A B C", "x y z", links, max_length=2)
    assert ("A B", "x y") in pairs("A B C", "x y z", links, max_length=2)
    spans = extract_spans(10, 10, [(i, i) for i in range(10)], max_length=3)
    assert max(i2 - i1 + 1 for i1, i2, _, _ in spans) == 3 and max(j2 - j1 + 1 for _, _, j1, j2 in spans) == 3
    assert len(spans) == 10 + 9 + 8  # a monotone diagonal: every span of 1-3 words


def test_links_outside_the_sentence_are_an_error():
    with pytest.raises(ValueError, match="outside"):
        extract_spans(2, 2, [(0, 2)])
