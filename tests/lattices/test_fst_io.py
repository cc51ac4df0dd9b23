import json

import numpy as np
import pytest

from lattices.fst_io import (default_alpha, lattice_paths, read_lattice, read_meta, sentence_index, symbol_table,
                             write_lattice)
from lattices.lattice import Lattice
from pipeline.errors import DataError
from tests.lattices.helpers import make_fst


def test_symbol_table_follows_the_format():
    table = symbol_table(["Haus", "<s>", "Hund"])
    assert [table.find(i) for i in range(5)] == ["<eps>", "<s>", "</s>", "Haus", "Hund"]


def test_write_then_read_keeps_arcs_weights_and_symbols(tmp_path):
    table = symbol_table(["a", "b"])
    fst = make_fst([(0, 2, 1, 0.5), (2, 1, 3, 0.25), (1, 3, 2, 0.0), (2, 3, 0, 1.5)], {3: 0.0}, symbols=table)
    fst.write(str(tmp_path / "x.fst"))
    lattice = read_lattice(tmp_path / "x.fst")
    assert lattice.symbols == {0: "<eps>", 1: "<s>", 2: "</s>", 3: "a", 4: "b"}
    assert sorted(lattice.paths()) == sorted([((1, 3, 2), 0.75), ((1,), 2.0)])
    assert (lattice.src < lattice.dst).all()  # topologically renumbered
    out = tmp_path / "folder" / "lattices" / "0.fst"
    write_lattice(lattice, out)
    again = read_lattice(out)
    assert sorted(again.paths()) == sorted(lattice.paths()) and again.symbols == lattice.symbols


def test_float32_weights_are_read_exactly(tmp_path):
    fst = make_fst([(0, 1, 3, 37.654)], {1: 0.0})
    fst.write(str(tmp_path / "x.fst"))
    assert read_lattice(tmp_path / "x.fst").cost[0] == float(np.float32(37.654))


def test_folder_layout_sentence_numbers_and_alpha(tmp_path):
    folder = tmp_path / "decoded"
    for i in (10, 2, 0):
        write_lattice(Lattice.from_arcs(2, 0, [(0, 1, 1, 0.0)], {1: 0.0}), folder / "lattices" / f"{i}.fst")
    assert [sentence_index(p) for p in lattice_paths(folder)] == [0, 2, 10]
    assert default_alpha(folder / "lattices" / "0.fst") is None
    (folder / "lattices.json").write_text(json.dumps({"alpha": 0.7, "sentences": 11, "weights": {},
                                                      "semiring": "tropical"}))
    assert default_alpha(folder / "lattices" / "0.fst") == 0.7 and read_meta(folder)["sentences"] == 11
    (folder / "lattices.json").write_text(json.dumps({"alpha": -1}))
    with pytest.raises(DataError, match="alpha"):
        default_alpha(folder / "lattices" / "0.fst")


def test_missing_and_broken_files_are_data_errors(tmp_path):
    with pytest.raises(DataError, match="no such lattice file"):
        read_lattice(tmp_path / "missing.fst")
    (tmp_path / "bad.fst").write_bytes(b"not an fst")
    with pytest.raises(DataError, match="bad.fst"):
        read_lattice(tmp_path / "bad.fst")
    with pytest.raises(DataError, match="sentence number"):
        sentence_index(tmp_path / "x.fst")
