import gzip
import math

import numpy as np
import pytest

from pipeline.smt.lexical import LexicalTable
from pipeline.smt.phrase_scoring import build_phrase_table
from pipeline.smt.phrase_table import FastPhraseTable, PhraseTable, cap_options, phrase_hash

CORPUS = [  # source, target, links
    ("das Haus", "the house", [(0, 0), (1, 1)]),
    ("das Buch", "the book", [(0, 0), (1, 1)]),
    ("ein Haus", "a house", [(0, 0), (1, 1)]),
    ("das", "that", [(0, 0)]),
    ("ja das", "that", [(1, 0)]),  # "ja" is unaligned
]


@pytest.fixture
def built(tmp_path):
    stats = build_phrase_table((s.split() for s, _, _ in CORPUS), (t.split() for _, t, _ in CORPUS),
                               (links for _, _, links in CORPUS), 7, tmp_path / "phrase-table.gz",
                               tmp_path / "phrase-table.npz", tmp_dir=tmp_path, sort_memory="10M")
    assert stats["sentences"] == 5 and stats["extracted_pairs"] == 12 and stats["phrase_pairs"] == 9
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("phrases-")]  # temporary files removed
    lines = gzip.open(tmp_path / "phrase-table.gz", "rt", encoding="utf-8").read().splitlines()
    return FastPhraseTable.load(tmp_path / "phrase-table.npz"), {tuple(line.split(" ||| ")[:2]): line
                                                                   for line in lines}


def test_lexical_probabilities_count_null_links():
    lexical = LexicalTable()
    for s, t, links in CORPUS:
        lexical.add(s.split(), t.split(), links)
    assert lexical.e_given_f("the", "das") == pytest.approx(2 / 4)  # das: the x2, that x2
    assert lexical.f_given_e("das", "that") == pytest.approx(1.0)
    assert lexical.e_given_f("NULL", "ja") == pytest.approx(1.0)
    assert lexical.weights(["ja", "das"], ["that"], [(1, 0)]) == pytest.approx((1.0 * 1.0, 0.5))


def test_scores_match_hand_computed_values(built):
    _, lines = built
    # c(das, that) = 2 (sentences 4 and 5), c(that) = 3 (das x2, "ja das" x1), c(das) = 4 (the x2, that x2)
    assert lines["das", "that"] == "das ||| that ||| 0.666667 1 0.5 0.5 ||| 0-0 ||| 3 4 2"
    assert lines["das", "the"] == "das ||| the ||| 1 1 0.5 0.5 ||| 0-0 ||| 2 4 2"
    # the unaligned "ja" takes w(ja|NULL) = 1 in lex(f|e); lex(e|f) = w(that|das) = 0.5
    assert lines["ja das", "that"] == "ja das ||| that ||| 0.333333 1 1 0.5 ||| 1-0 ||| 3 1 1"
    assert lines["das Haus", "the house"] == "das Haus ||| the house ||| 1 1 1 0.5 ||| 0-0 1-1 ||| 1 1 1"
    assert ("ja", "that") not in lines and len(lines) == 9


def test_moses_text_is_sorted_like_moses_and_reads_back(built, tmp_path):
    table, _ = built
    text = gzip.open(tmp_path / "phrase-table.gz", "rt").read().splitlines()
    assert text == sorted(text, key=lambda line: line.encode("utf-8"))  # LC_ALL=C sort order
    again = PhraseTable.from_moses(tmp_path / "phrase-table.gz")
    for source in table.sources:
        targets, scores = table.lookup(source)
        targets2, scores2 = again.lookup(source)
        assert sorted(targets) == sorted(targets2)
        order = [targets.index(t) for t in targets2]
        np.testing.assert_allclose(scores[order], scores2, atol=1e-5)


def test_fast_form_lookup_and_round_trip(built, tmp_path):
    loaded, _ = built
    targets, scores = loaded.lookup("das")
    assert targets == ["that", "the"]
    assert scores.dtype == np.float32 and scores[0] == pytest.approx(np.log([2 / 3, 1, 0.5, 0.5]), abs=1e-6)
    assert loaded.lookup("Kuh") is None and loaded.lookup("das Haus ja") is None and len(loaded) == 9
    assert sorted(loaded.sources) == ["Buch", "Haus", "das", "das Buch", "das Haus", "ein", "ein Haus", "ja das"]
    memory = PhraseTable.from_entries({"a": [("x", [0.5, 0.5, 0.5, 0.5])], "a b": [("y z", [1, 1, 1, 0.25])]})
    memory.save(tmp_path / "m.npz")
    again = FastPhraseTable.load(tmp_path / "m.npz")
    assert again.max_length == 2 and again.lookup("a b")[0] == ["y z"]
    np.testing.assert_array_equal(again.lookup("a b")[1], memory.lookup("a b")[1])
    assert phrase_hash("a b") == phrase_hash("a b") != phrase_hash("a")


def test_filter_keeps_only_phrases_of_the_sentences(built):
    table, _ = built
    small = table.filter([["ja", "das", "Buch"]])
    assert sorted(small.sources) == ["Buch", "das", "das Buch", "ja das"]
    assert small.lookup("das")[0] == table.lookup("das")[0]
    np.testing.assert_array_equal(small.lookup("Buch")[1], table.lookup("Buch")[1])
    assert len(table.filter([[]])) == 0


def test_cap_keeps_the_best_by_weighted_score():
    scores = np.array([0.1, 3.0, -1.0, 3.0, 2.0])
    assert cap_options(scores, 3).tolist() == [1, 3, 4]
    assert cap_options(scores, 0).tolist() == [1, 3, 4, 0, 2]


def test_from_entries_takes_probabilities():
    table = PhraseTable.from_entries({"a b": [("x", [0.5, 0.25, 1.0, 0.125])]})
    assert table.max_length == 2
    assert table.lookup("a b")[1][0] == pytest.approx([math.log(0.5), math.log(0.25), 0.0, math.log(0.125)])


@pytest.mark.parametrize("seed", range(3))
def test_lexical_weigher_gives_the_tables_floats(seed):
    """LexicalWeigher (the scoring pass) against LexicalTable.weights, to the last bit, on every extracted pair of a
    random corpus with unaligned words and words of several links."""
    import random

    from pipeline.smt.extract import extract_pairs
    from pipeline.smt.lexical import LexicalWeigher
    from tests.pipeline.smt.test_extract import random_alignment

    rng = random.Random(seed)
    corpus = []
    for _ in range(60):
        src = [f"f{rng.randint(0, 9)}" for _ in range(rng.randint(1, 9))]
        tgt = [f"e{rng.randint(0, 9)}" for _ in range(rng.randint(1, 9))]
        corpus.append((src, tgt, sorted(set(random_alignment(rng, len(src), len(tgt))))))
    lexical = LexicalTable()
    for src, tgt, links in corpus:
        lexical.add(src, tgt, links)
    weigher = LexicalWeigher(lexical)
    several = 0
    for src, tgt, links in corpus:
        for f, e, local in extract_pairs(src, tgt, links, 4):
            parsed = [tuple(map(int, link.split("-"))) for link in local.split()]
            assert weigher.weights(f.split(), e.split(), local) == lexical.weights(f.split(), e.split(), parsed)
            several += len(parsed) != len({i for i, _ in parsed}) or len(parsed) != len({j for _, j in parsed})
    assert several > 0  # the sums over several links were exercised


def test_fast_form_from_probabilities_equals_per_phrase_logs(tmp_path):
    """add_probabilities takes logs in blocks; the arrays equal those of add() with the logs of each phrase."""
    from pipeline.smt.phrase_table import FastFormWriter

    rng = np.random.default_rng(0)
    phrases = [(f"s{k}", [f"t{k} {r}" for r in range(rng.integers(1, 6))]) for k in range(300)]
    probabilities = [rng.uniform(1e-6, 1.0, size=(len(targets), 4)) for _, targets in phrases]
    one_by_one, blocks = FastFormWriter(3), FastFormWriter(3)
    blocks.LOG_BLOCK = 64  # several blocks, and phrases that straddle them
    for k, ((source, targets), values) in enumerate(zip(phrases, probabilities)):
        one_by_one.add(source, targets, np.log(values))
        if k % 50 == 7:
            blocks.add(source, targets, np.log(values))  # mixing both keeps the rows in order
        else:
            blocks.add_probabilities(source, targets, values.ravel().tolist())
    one_by_one.save(tmp_path / "a.npz")
    blocks.save(tmp_path / "b.npz")
    with np.load(tmp_path / "a.npz") as a, np.load(tmp_path / "b.npz") as b:
        assert sorted(a.files) == sorted(b.files)
        for name in a.files:
            np.testing.assert_array_equal(a[name], b[name])
