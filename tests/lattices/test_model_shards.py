"""L and acceptors of word lattice files in a pretrained model's units: the shards hold what is built by hand from
the mapped lattices, and the mapper of a loaded model refuses what it cannot map."""
from __future__ import annotations

import json
import types

import pytest

pytest.importorskip("transformers")
pytest.importorskip("sentencepiece")

from lattices.fst_io import lattice_paths, read_lattice, symbol_table, write_lattice  # noqa: E402
from lattices.lattice import Lattice  # noqa: E402
from lattices.lmatrix import build_lmatrix  # noqa: E402
from lattices.lmatrix_shards import load_shard  # noqa: E402
from lattices.acceptor import load_acceptors  # noqa: E402
from lattices.model_shards import (MODEL_UNIT_CONVENTION, build_model_acceptor_shard,  # noqa: E402
                                   build_model_lmatrix_shard, model_unit_mapper)
from lattices.model_units import LABEL_OFFSET, map_lattice_to_model  # noqa: E402
from lattices.posteriors import ngram_posteriors  # noqa: E402
from lattices.theta import Theta  # noqa: E402
from pipeline.nmt.pretrained import load_pretrained  # noqa: E402
from pipeline.text.tokenizers import get_tokenizer  # noqa: E402
from tests.pipeline.nmt.tiny_hf import tiny_marian  # noqa: E402

THETA = Theta.from_precisions([60.0, 40.0, 30.0, 20.0])


@pytest.fixture(scope="module")
def vocab(tmp_path_factory):
    folder = tiny_marian(tmp_path_factory.mktemp("marian"), seed=1)
    return load_pretrained(folder, "de", "en", offset=LABEL_OFFSET).vocab


def write_lattices(folder):
    """Two word lattices (<s> haus|baum katze|hund mond|haus </s>; the second without baum) with lattices.json."""
    words = ["haus", "katze", "hund", "baum", "mond"]
    table = symbol_table(words)
    w = table.find
    arcs = [(0, 1, w("<s>"), 0.0), (1, 2, w("haus"), 0.1), (1, 2, w("baum"), 0.7), (2, 3, w("katze"), 0.2),
            (2, 3, w("hund"), 1.2), (3, 4, w("mond"), 0.4), (3, 4, w("haus"), 0.0), (4, 5, w("</s>"), 0.0)]
    symbols = {table.find(s): s for s in ["<s>", "</s>", *words]}
    for i in range(2):
        lattice = Lattice.from_arcs(6, 0, arcs[:2] + arcs[3:] if i else arcs, {5: 0.0}, symbols)  # 1: no "baum"
        write_lattice(lattice, folder / "lattices" / f"{i}.fst")
    (folder / "lattices.json").write_text(json.dumps({"alpha": 0.5}))
    return lattice_paths(folder)


def test_the_shard_holds_the_posteriors_and_l_of_the_mapped_lattices(vocab, tmp_path):
    write_lattices(tmp_path)
    mapper = model_unit_mapper(vocab, get_tokenizer("moses", "en").detokenize)
    stats = build_model_lmatrix_shard(lattice_paths(tmp_path), mapper, len(vocab), THETA, None, "tropical", 0,
                                      tmp_path / "shard.npz", model="tiny")
    signature = stats["signature"]
    assert signature["alpha"] == 0.5 and signature["units"] == MODEL_UNIT_CONVENTION
    assert signature["model"] == "tiny" and signature["vocab_size"] == len(vocab)
    loaded = load_shard(tmp_path / "shard.npz")
    assert [m.sentence for m in loaded] == [0, 1]
    for m, path in zip(loaded, lattice_paths(tmp_path)):
        posteriors = ngram_posteriors(map_lattice_to_model(read_lattice(path), mapper), 4, 0.5, "tropical")
        expected = build_lmatrix(posteriors, THETA, len(vocab), m.sentence)
        assert m.posteriors.as_dict() == pytest.approx(posteriors.as_dict(), abs=1e-12)
        assert m.num_rows == expected.num_rows and m.nnz == expected.nnz
        assert (vocab.bos_id,) in m.posteriors.as_dict()  # <s> is the search's first token: L's first row
        assert min(t for ngram in m.posteriors.as_dict() for t in ngram) >= LABEL_OFFSET  # never the epsilon


def test_the_acceptors_accept_the_mapped_lattices_strings_in_the_decoders_ids(vocab, tmp_path):
    paths = write_lattices(tmp_path)
    mapper = model_unit_mapper(vocab, get_tokenizer("moses", "en").detokenize)
    stats = build_model_acceptor_shard(paths, mapper, 0, tmp_path / "acceptors.npz")
    acceptors = load_acceptors([tmp_path / "acceptors.npz"])
    assert stats["sentences"] == 2 and not stats["empty"] and sorted(acceptors) == [0, 1]
    for k, path in enumerate(paths):
        strings = [labels for labels, _ in map_lattice_to_model(read_lattice(path), mapper).paths()]
        assert len(strings) == (8 if k == 0 else 4)
        for labels in strings:  # <s> ... </s> in target ids (model ids + 1): the acceptor holds what is between
            assert labels[0] == vocab.bos_id and labels[-1] == vocab.eos_id
            assert acceptors[k].accepts(labels[1:-1])
        assert not acceptors[k].accepts(strings[0][1:-2])  # a prefix that cannot end there


def test_the_mapper_needs_the_offset_and_a_sentencepiece_model(vocab):
    with pytest.raises(ValueError, match="must be shifted by 1"):
        model_unit_mapper(types.SimpleNamespace(offset=0, tokenizer=vocab.tokenizer), str)
    fast = types.SimpleNamespace(offset=1, tokenizer=types.SimpleNamespace(), bos_id=1, eos_id=2)
    with pytest.raises(ValueError, match="no SentencePiece processor"):
        model_unit_mapper(fast, str)
