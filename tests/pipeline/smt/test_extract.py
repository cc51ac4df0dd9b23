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


def random_alignment(rng, src_len: int, tgt_len: int) -> list[tuple[int, int]]:
    """Links near the diagonal, some words unaligned, some aligned to several (with duplicate links)."""
    links = [(i, min(tgt_len - 1, max(0, i + rng.randint(-2, 2)))) for i in range(src_len) if rng.random() < 0.8]
    links += [(rng.randrange(src_len), rng.randrange(tgt_len)) for _ in range(rng.randint(0, 3))]
    return links + links[:1]


@pytest.mark.parametrize("seed", range(5))
def test_local_alignment_is_every_link_inside_the_box(seed):
    """Against the definition: the links with both ends inside the pair's spans, shifted to its corner."""
    import random

    rng = random.Random(seed)
    for _ in range(40):
        src = [f"s{k}" for k in range(rng.randint(1, 12))]
        tgt = [f"t{k}" for k in range(rng.randint(1, 12))]
        links = random_alignment(rng, len(src), len(tgt))
        spans = extract_spans(len(src), len(tgt), sorted(set(links)), 5)
        got = list(extract_pairs(src, tgt, links, 5))
        assert len(got) == len(spans)
        for (i1, i2, j1, j2), (f, e, local) in zip(spans, got):
            inside = sorted((i - i1, j - j1) for i, j in set(links) if i1 <= i <= i2 and j1 <= j <= j2)
            assert local == " ".join(f"{i}-{j}" for i, j in inside)
            assert (f, e) == (" ".join(src[i1:i2 + 1]), " ".join(tgt[j1:j2 + 1]))
