"""Words back from units (lattices/restore.py) against enumeration of the word lattice's paths."""
from __future__ import annotations

import random

import pytest

from lattices.lattice import Lattice
from lattices.restore import WordRestorer, restore_words
from lattices.units import TokenMapper
from pipeline.vocab import SPECIALS, Vocabulary

KNOWN = ("house", "the", "big", "red")
#: words outside the vocabulary: each becomes <unk>, so "Meyer" and "Schulz" spell the same units
WORDS = KNOWN + ("Meyer", "Schulz", "42")
SYMBOLS = {1: "<s>", 2: "</s>", **{3 + k: w for k, w in enumerate(WORDS)}}


def mapper() -> TokenMapper:
    return TokenMapper(Vocabulary(SPECIALS + KNOWN), None)


def random_word_lattice(rng: random.Random) -> tuple[Lattice, list[tuple[tuple[str, ...], float]]]:
    """<s> words </s> paths (some sharing states), and every complete path's words and cost."""
    arcs, paths, n = [], [], 2
    arcs.append((0, 1, 1, 0.5))
    for _ in range(rng.randint(1, 6)):
        words = [rng.choice(WORDS) for _ in range(rng.randint(1, 4))]
        prev, cost = 1, 0.5
        for w in words:
            c = round(rng.uniform(0.0, 2.0), 3)
            label = next(x for x, s in SYMBOLS.items() if s == w)
            arcs.append((prev, n, label, c))
            prev, n, cost = n, n + 1, cost + c
        arcs.append((prev, n, 2, 0.0))
        paths.append((tuple(words), cost))
        n += 1
    finals = {q: 0.0 for _, q, x, _ in arcs if x == 2}
    return Lattice.from_arcs(n, 0, arcs, finals, SYMBOLS), paths


@pytest.mark.parametrize("seed", range(8))
def test_the_words_are_the_cheapest_path_that_spells_the_units(seed):
    rng = random.Random(seed)
    lattice, paths = random_word_lattice(rng)
    m = mapper()
    spelled = {}
    for words, cost in paths:
        units = tuple(u for w in words for u in m.ids(w))
        if units not in spelled or cost < spelled[units][1]:
            spelled[units] = (list(words), cost)
    for units, (words, _) in spelled.items():
        assert restore_words(lattice, m, units) == words
    assert restore_words(lattice, m, (m.vocab.id("house"),) * 6) is None  # no path spells it


def write_word_lattice(folder, arcs: list[tuple[int, int, str, float]]) -> None:
    """folder/lattices/0.fst: a word lattice in the lattice format (its symbol table), start 0, the last state final."""
    import pynini

    from lattices.fst_io import symbol_table  # the lattice format's table: <eps>, <s>, </s>, words

    table = symbol_table(WORDS)
    ids = {table.find(i): i for i in range(table.num_symbols())}
    fst = pynini.Fst()
    fst.add_states(max(d for _, d, _, _ in arcs) + 1)
    fst.set_start(0)
    for s, d, word, cost in arcs:
        fst.add_arc(s, pynini.Arc(ids[word], ids[word], pynini.Weight("tropical", cost), d))
    fst.set_final(fst.num_states() - 1)
    fst.set_input_symbols(table)
    fst.set_output_symbols(table)
    (folder / "lattices").mkdir()
    fst.write(str(folder / "lattices" / "0.fst"))


def test_unknown_words_come_back_from_the_lattice_and_texts_without_unk_stay(tmp_path):
    write_word_lattice(tmp_path, [(0, 1, "<s>", 0.0), (1, 2, "Meyer", 1.0), (1, 2, "Schulz", 0.5),
                                  (2, 3, "big", 0.0), (3, 4, "house", 0.0), (4, 5, "</s>", 0.0)])
    restorer = WordRestorer(tmp_path / "lattices", mapper())
    texts, changed = restorer.restore([0, 0, 1], ["<unk> big house", "big house", "<unk> house"],
                                      ["<unk> big house", "big house", "<unk> house"], " ".join)
    assert texts == ["Schulz big house", "big house", "<unk> house"]  # the cheaper of two; line 1 has no lattice
    assert changed == [0]


class _Pieces:
    """A BPE segmenter of fixed segmentations (other words are one piece)."""

    SEGMENTS = {"Verhängnis": ["Ver@@", "hä@@", "ngnis"], "Verä": ["Ver@@", "ä"], "Häuser": ["Hä@@", "user"]}

    def segment(self, words: list[str]) -> list[str]:
        return [piece for word in words for piece in self.SEGMENTS.get(word, [word])]


def bpe_mapper() -> TokenMapper:
    """Known pieces: KNOWN, "Ver@@", "ngnis", "user", "big@@"; "hä@@", "ä", "Hä@@" and the names are <unk>."""
    return TokenMapper(Vocabulary(SPECIALS + KNOWN + ("Ver@@", "ngnis", "user", "big@@")), _Pieces())


def chain_lattice(words_by_state: list[list[str]]) -> Lattice:
    """<s>, then at position k an arc for each word of words_by_state[k] (states k+1 -> k+2), then </s>."""
    table = {1: "<s>", 2: "</s>"}
    for words in words_by_state:
        for w in words:
            if w not in table.values():
                table[len(table) + 1] = w
    label = {w: x for x, w in table.items()}
    arcs = [(0, 1, 1, 0.0)]
    for k, words in enumerate(words_by_state):
        arcs += [(k + 1, k + 2, label[w], 1.0) for w in words]
    end = len(words_by_state) + 1
    arcs.append((end, end + 1, 2, 0.0))
    return Lattice.from_arcs(end + 2, 0, arcs, {end + 1: 0.0}, table)


def test_unconstrained_outputs_get_the_lattice_word_of_each_unknown_spelling():
    from lattices.restore import restore_unknown_words, unknown_word_spellings

    m = bpe_mapper()
    lattice = chain_lattice([["the"], ["Verhängnis", "Verä"], ["Meyer", "big"], ["Schulz", "Häuser"], ["house"]])
    unk, ver, ngnis, user = m.vocab.unk_id, m.vocab.id("Ver@@"), m.vocab.id("ngnis"), m.vocab.id("user")
    # names of one spelling in the order the lattice reaches them; no known word is a spelling
    assert unknown_word_spellings(lattice, m) == {(ver, unk, ngnis): ["Verhängnis"], (ver, unk): ["Verä"],
                                                  (unk,): ["Meyer", "Schulz"], (unk, user): ["Häuser"]}

    def restore(text: str) -> list[str] | None:
        return restore_unknown_words(lattice, m, text.split())

    assert restore("the Ver@@ <unk> ngnis house") == ["the", "Verhängnis", "house"]  # the longest spelling
    assert restore("Ver@@ <unk> house") == ["Verä", "house"]
    assert restore("<unk> big <unk> house <unk>") == ["Meyer", "big", "Schulz", "house", "Meyer"]  # then again
    assert restore("<unk> user red") == ["Häuser", "red"]
    assert restore("red <unk> <unk>") == ["red", "Meyer", "Schulz"]
    assert restore("big@@ <unk> house") is None  # inside a word: no lattice word starts there
    assert restore("the big house") is None  # nothing to restore
    assert restore_unknown_words(chain_lattice([["the"], ["house"]]), m, ["<unk>", "house"]) is None


def test_the_restorer_of_unconstrained_outputs_takes_words_in_lattice_order(tmp_path):
    write_word_lattice(tmp_path, [(0, 1, "<s>", 0.0), (1, 2, "Meyer", 1.0), (1, 2, "Schulz", 0.5),
                                  (2, 3, "big", 0.0), (3, 4, "house", 0.0), (4, 5, "42", 0.0), (5, 6, "</s>", 0.0)])
    restorer = WordRestorer(tmp_path / "lattices", mapper())
    outputs = ["<unk> big house", "house <unk> <unk> <unk>", "big house", "<unk> house"]
    texts, changed = restorer.restore([0, 0, 0, 1], outputs, outputs, " ".join, paths=False)
    # not the cheapest (Schulz): the first the lattice reaches; "42" is the third of the spelling <unk>
    assert texts == ["Meyer big house", "house Meyer Schulz 42", "big house", "<unk> house"]
    assert changed == [0, 1]
    # as lattice strings, the same outputs take the cheapest path that spells them, or stay
    paths = ["<unk> big house <unk>", "house <unk> <unk> <unk>"]
    assert restorer.restore([0, 0], paths, paths, " ".join)[0] == ["Schulz big house 42", "house <unk> <unk> <unk>"]
    # anchored search: the outputs at the positions given are lattice strings, the others unconstrained
    mixed = ["<unk> big house <unk>", "<unk> big house <unk>"]
    assert restorer.restore([0, 0], mixed, mixed, " ".join, paths={1})[0] == ["Meyer big house Schulz",
                                                                               "Schulz big house 42"]
    assert restorer.restore([0, 0], mixed, mixed, " ".join, paths=set())[0] == ["Meyer big house Schulz"] * 2
