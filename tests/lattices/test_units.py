import random

import pynini
import pytest

from lattices.fst_io import symbol_table
from lattices.lattice import Lattice
from lattices.units import TokenMapper, map_lattice
from pipeline.text.bpe import BpeSegmenter
from pipeline.vocab import Vocabulary
from tests.lattices.helpers import fst_paths, make_fst, string_costs

WORDS = ["The", "man", "sees", "a", "house", "teacher", "neighbour", "Zyxwvut", "today", ".", "!"]


def word_lattice(rng: random.Random, table) -> pynini.Fst:
    """<s> (two or three word slots, some with epsilons and parallel words) </s>."""
    ids = [table.find(w) for w in WORDS]
    arcs = [(0, 1, table.find("<s>"), 0.5)]
    q = 1
    for slot in range(rng.randint(2, 4)):
        for _ in range(rng.randint(1, 3)):
            arcs.append((q, q + 1, rng.choice(ids), round(rng.uniform(0, 2), 3)))
        if rng.random() < 0.3:
            arcs.append((q, q + 1, 0, 1.0))
        q += 1
    arcs.append((q, q + 1, table.find("</s>"), 0.0))
    return make_fst(arcs, {q + 1: 0.0}, symbols=table)


def test_mapped_lattice_accepts_exactly_the_bpe_segmentations_of_the_word_strings(bpe_files):
    codes, vocab_path = bpe_files
    vocab = Vocabulary.load(vocab_path)
    segmenter = BpeSegmenter(codes)
    mapper = TokenMapper.from_files(codes, vocab_path)
    table = symbol_table(WORDS)
    rng = random.Random(1)
    saw_split = saw_unk = False
    for trial in range(10):
        fst = word_lattice(rng, table)
        expected = {}
        for labels, cost in string_costs(fst_paths(fst), 1.0, "tropical").items():
            words = [table.find(x) for x in labels]
            assert words[0] == "<s>" and words[-1] == "</s>"
            pieces = segmenter.segment(words[1:-1])  # the sentence as ApplyBPE segments it
            saw_split |= len(pieces) > len(words) - 2
            ids = (vocab.bos_id,) + tuple(vocab.encode(pieces)) + (vocab.eos_id,)
            saw_unk |= vocab.unk_id in ids
            expected[ids] = cost
        mapped = map_lattice(Lattice.from_fst(fst), mapper)
        got = string_costs(fst_paths(mapped.to_fst("log64")), 1.0, "tropical")
        assert set(got) == set(expected)
        assert all(abs(got[s] - expected[s]) < 1e-9 for s in expected)  # the weight moved with the word
        assert mapped.symbols[vocab.bos_id] == "<s>"
    assert saw_split and saw_unk


def test_word_weight_goes_on_the_first_piece(bpe_files):
    codes, vocab_path = bpe_files
    mapper = TokenMapper.from_files(codes, vocab_path)
    table = symbol_table(["Zyxwvut"])
    assert len(mapper.ids("Zyxwvut")) > 1
    mapped = map_lattice(Lattice.from_fst(make_fst([(0, 1, table.find("Zyxwvut"), 2.5)], {1: 0.0},
                                                   symbols=table)), mapper)
    assert mapped.cost.tolist() == [2.5] + [0.0] * (len(mapper.ids("Zyxwvut")) - 1)


def test_specials_map_by_convention(bpe_files):
    codes, vocab_path = bpe_files
    vocab = Vocabulary.load(vocab_path)
    mapper = TokenMapper.from_files(codes, vocab_path)
    assert mapper.ids("<s>") == (vocab.bos_id,) and mapper.ids("</s>") == (vocab.eos_id,)
    assert mapper.ids("<unk>") == (vocab.unk_id,) and mapper.ids("<pad>") == (vocab.unk_id,)
    assert vocab.pad_id not in {i for w in WORDS for i in mapper.ids(w)}


def test_without_codes_words_are_units(bpe_files):
    _, vocab_path = bpe_files
    vocab = Vocabulary.load(vocab_path)
    mapper = TokenMapper.from_files(None, vocab_path)
    assert mapper.ids("man") == (vocab.id("man"),)


def test_lattice_without_symbols_cannot_be_mapped(bpe_files):
    codes, vocab_path = bpe_files
    with pytest.raises(ValueError, match="symbol table"):
        map_lattice(Lattice.from_arcs(2, 0, [(0, 1, 3, 0.0)], {1: 0.0}), TokenMapper.from_files(codes, vocab_path))
