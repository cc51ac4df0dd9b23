import dataclasses
import json
import math
import random

import numpy as np
import pytest

from lattices.determinize import determinize
from lattices.fst_io import symbol_table, write_lattice
from lattices.lattice import Lattice
from lattices.lmatrix import build_lmatrix
from lattices.lmatrix_shards import LMatrixStore, ShardWriter, build_lmatrix_shard, load_shard, save_shard
from lattices.posteriors import ngram_posteriors
from lattices.theta import Theta
from lattices.units import TokenMapper, map_lattice
from pipeline.errors import DataError
from pipeline.text.bpe import BpeSegmenter
from pipeline.vocab import Vocabulary
from tests.lattices.helpers import make_fst, random_fst

THETA = Theta.from_precisions([60.0, 40.0, 30.0, 20.0])
VOCAB = 16


def random_lmatrix(rng: random.Random, sentence: int = 0, order: int = 4):
    lattice = Lattice.from_fst(random_fst(rng, states=rng.randint(4, 10), alphabet=6))
    return build_lmatrix(ngram_posteriors(lattice, order, 1.0), THETA, VOCAB, sentence)


def concatenated_shard(matrices, signature):
    """The shard's arrays built in memory, column by column (the oracle of the streamed file)."""
    def cat(parts, dtype):
        return np.concatenate(parts).astype(dtype)

    def offsets(sizes):
        return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)

    autos = [m.automaton for m in matrices]
    return {
        "sentences": np.asarray([m.sentence for m in matrices], np.int64),
        "vocab_size": np.asarray(VOCAB, np.int64), "order": np.asarray(matrices[0].posteriors.order, np.int64),
        "theta": np.stack([m.theta for m in matrices]),
        "row_offsets": offsets([m.num_rows for m in matrices]),
        "row_tokens": cat([a.history_tokens for a in autos], np.int32),
        "uni_offsets": offsets([m.uni_tokens.size for m in matrices]),
        "uni_tokens": cat([m.uni_tokens for m in matrices], np.int32),
        "uni_values": cat([m.uni_values for m in matrices], np.float32),
        "hi_row_sizes": cat([np.diff(m.hi_indptr) for m in matrices], np.int32),
        "hi_tokens": cat([m.hi_tokens for m in matrices], np.int32),
        "hi_values": cat([m.hi_values for m in matrices], np.float32),
        "trans_offsets": offsets([a.trans_rows.size for a in autos]),
        "trans_rows": cat([a.trans_rows for a in autos], np.int32),
        "trans_tokens": cat([a.trans_tokens for a in autos], np.int32),
        "trans_next": cat([a.trans_next for a in autos], np.int32),
        "unirow_offsets": offsets([a.unigram_tokens.size for a in autos]),
        "unirow_tokens": cat([a.unigram_tokens for a in autos], np.int32),
        "unirow_rows": cat([a.unigram_rows for a in autos], np.int32),
        "ngram_offsets": offsets([len(m.posteriors) for m in matrices]),
        "ngram_tokens": cat([m.posteriors.tokens for m in matrices], np.int32),
        "ngram_values": cat([m.posteriors.values for m in matrices], np.float64),
        "margins": np.asarray([m.posteriors.margin for m in matrices], np.float64),
        "signature": np.asarray(json.dumps(signature)),
    }


@pytest.mark.parametrize("spool_above", [0, 5000, None])  # every sentence spooled, from the fourth on, none
def test_the_streamed_shard_holds_each_column_concatenated_over_its_sentences(tmp_path, spool_above):
    rng = random.Random(7)
    matrices = [random_lmatrix(rng, sentence=s) for s in (4, 0, 9, 2)]
    matrices.insert(2, build_lmatrix(ngram_posteriors(Lattice.empty(), 4), THETA, VOCAB, 5))  # no n-grams at all
    signature = {"theta": [1.0, 2.0], "note": "x"}
    with ShardWriter(tmp_path / "s.npz", *([] if spool_above is None else [spool_above])) as shard:
        for k, m in enumerate(matrices):  # the first three hold 3,020 bytes of columns, the first four 5,436
            shard.add(m)
            spooled = list(tmp_path.glob("s.npz.tmp-*"))
            assert bool(spooled) == (spool_above is not None and (spool_above == 0 or k >= 3))
        assert len(shard) == 5
        shard.finish(signature)
    expected = concatenated_shard(matrices, signature)
    with np.load(tmp_path / "s.npz", allow_pickle=False) as z:
        assert z.files == list(expected)
        for name, want in expected.items():
            got = z[name]
            assert got.dtype == want.dtype and got.shape == want.shape, name
            np.testing.assert_array_equal(got, want, err_msg=name)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.npz"]  # no spool left


def test_a_shard_left_unfinished_leaves_no_file_and_no_spool(tmp_path):
    rng = random.Random(8)
    with pytest.raises(RuntimeError, match="stop"):
        with ShardWriter(tmp_path / "s.npz", spool_above=0) as shard:
            shard.add(random_lmatrix(rng))
            assert list(tmp_path.glob("s.npz.tmp-*"))  # the spool exists
            raise RuntimeError("stop")
    assert not list(tmp_path.iterdir())
    with pytest.raises(ValueError, match="at least one sentence"):
        with ShardWriter(tmp_path / "s.npz") as shard:
            shard.finish({})
    with pytest.raises(ValueError, match="vocabulary size"):
        with ShardWriter(tmp_path / "s.npz") as shard:
            shard.add(random_lmatrix(rng))
            shard.add(build_lmatrix(random_lmatrix(rng).posteriors, THETA, VOCAB + 1))
    assert not list(tmp_path.iterdir())


def test_shard_round_trip_and_store_across_shards(tmp_path):
    rng = random.Random(4)
    matrices = [random_lmatrix(rng, sentence=s) for s in range(5)]
    matrices[1].posteriors = dataclasses.replace(matrices[1].posteriors, margin=1.25)  # a pruned evidence space
    save_shard(tmp_path / "a.npz", matrices[:3], {"x": 1})
    save_shard(tmp_path / "b.npz", matrices[3:])
    loaded = load_shard(tmp_path / "a.npz")
    assert [m.sentence for m in loaded] == [0, 1, 2] and loaded[0].signature == {"x": 1}
    for a, b in zip(matrices, loaded):
        assert a.automaton.histories == b.automaton.histories
        np.testing.assert_array_equal(a.dense_rows(np.arange(a.num_rows)), b.dense_rows(np.arange(b.num_rows)))
        rows = np.arange(a.num_rows).repeat(VOCAB)
        tokens = np.tile(np.arange(VOCAB), a.num_rows)
        np.testing.assert_array_equal(a.automaton.next_rows(rows, tokens), b.automaton.next_rows(rows, tokens))
        assert a.posteriors.as_dict() == b.posteriors.as_dict() and a.posteriors.margin == b.posteriors.margin
    store = LMatrixStore([tmp_path / "a.npz", tmp_path / "b.npz"], cache_shards=1)
    assert store.sentences() == [0, 1, 2, 3, 4]
    got = store.get([4, 0, 3])
    assert [m.sentence for m in got] == [4, 0, 3]
    assert not list(tmp_path.glob("*.tmp-*"))


def test_build_lmatrix_shard_from_lattice_files(tmp_path, bpe_files):
    codes, vocab_path = bpe_files
    vocab = Vocabulary.load(vocab_path)
    table = symbol_table(["The", "man", "woman", "sees", "a", "house", "."])
    w = table.find
    folder = tmp_path / "decoded"
    arcs = [(0, 1, w("<s>"), 0.0), (1, 2, w("The"), 0.1), (2, 3, w("man"), 0.2), (2, 3, w("woman"), 1.2),
            (3, 4, w("sees"), 0.0), (4, 5, w("a"), 0.3), (5, 6, w("house"), 0.1), (6, 7, w("."), 0.0),
            (7, 8, w("</s>"), 0.0)]
    for i in range(3):
        write_lattice(Lattice.from_fst(make_fst(arcs[: 6 + i] + [(5 + i, 8, w("</s>"), 0.0)], {8: 0.0},
                                                symbols=table)), folder / "lattices" / f"{i}.fst")
    (folder / "lattices.json").write_text(json.dumps({"alpha": 0.5, "sentences": 3, "weights": {},
                                                      "semiring": "tropical"}))
    paths = sorted((folder / "lattices").glob("*.fst"))
    stats = build_lmatrix_shard(paths, codes, vocab_path, THETA, None, "tropical", 2, tmp_path / "L" / "0.npz")
    assert stats["sentences"] == 3 and stats["signature"]["alpha"] == 0.5 and stats["signature"]["nbest"] == 2
    assert stats["signature"]["theta"] == THETA.signature()
    loaded = load_shard(tmp_path / "L" / "0.npz")
    # the same as mapping and computing by hand
    mapper = TokenMapper(vocab, BpeSegmenter(codes))
    units = map_lattice(Lattice.from_fst(make_fst(arcs[:6] + [(5, 8, w("</s>"), 0.0)], {8: 0.0}, symbols=table)),
                        mapper)
    expected = ngram_posteriors(units, 4, 0.5, "tropical", nbest=2).as_dict()
    assert loaded[0].posteriors.as_dict() == pytest.approx(expected, abs=1e-12)
    assert (vocab.bos_id,) in loaded[0].posteriors.as_dict()
    with pytest.raises(DataError, match="no alpha"):
        build_lmatrix_shard([tmp_path / "elsewhere" / "0.fst"], codes, vocab_path, THETA, None, "log", 0,
                            tmp_path / "x.npz")


def test_build_lmatrix_shard_records_the_sentences_pruned_to_fit_the_state_bound(tmp_path, bpe_files):
    codes, vocab_path = bpe_files
    table = symbol_table(["The", "man", "woman", "boy", "sees", "a", "house", "."])
    w = table.find
    chain = [(0, 1, w("<s>"), 0.0), (1, 2, w("The"), 0.1), (3, 4, w("sees"), 0.0), (4, 5, w("a"), 0.3),
             (5, 6, w("house"), 0.1), (6, 7, w("</s>"), 0.0)]
    branches = {0: [(2, 3, w("man"), 0.2)],  # one path
                1: [(2, 3, w("man"), 0.2), (2, 3, w("woman"), 1.2), (2, 3, w("boy"), 2.5)]}  # three strings
    folder = tmp_path / "decoded"
    for i, extra in branches.items():
        write_lattice(Lattice.from_fst(make_fst(chain + extra, {7: 0.0}, symbols=table)),
                      folder / "lattices" / f"{i}.fst")
    (folder / "lattices.json").write_text(json.dumps({"alpha": 1.0}))
    paths = sorted((folder / "lattices").glob("*.fst"))
    mapper = TokenMapper(Vocabulary.load(vocab_path), BpeSegmenter(codes))
    units = [map_lattice(Lattice.from_fst(make_fst(chain + extra, {7: 0.0}, symbols=table)), mapper)
             for extra in branches.values()]
    one_path = determinize(units[0], "tropical").num_states
    assert determinize(units[1], "tropical").num_states > one_path  # the bound below prunes sentence 1 only
    stats = build_lmatrix_shard(paths, codes, vocab_path, THETA, None, "tropical", 0, tmp_path / "L.npz",
                                engine="exact", max_states=one_path)
    expected = ngram_posteriors(units[1], 4, 1.0, "tropical", max_states=one_path)
    assert set(stats["pruned"]) == {1} and stats["pruned"][1] == pytest.approx(expected.margin)
    assert stats["signature"]["max_states"] == one_path
    loaded = load_shard(tmp_path / "L.npz")
    assert math.isinf(loaded[0].posteriors.margin) and loaded[1].posteriors.margin == pytest.approx(expected.margin)
    assert loaded[1].posteriors.as_dict() == pytest.approx(expected.as_dict(), abs=1e-12)
    assert expected.margin == 0.0 and len(expected) < len(ngram_posteriors(units[1], 4))  # the best path alone
