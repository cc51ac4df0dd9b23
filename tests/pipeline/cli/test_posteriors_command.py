import json

import pytest

from lattices.fst_io import symbol_table, write_lattice
from lattices.lattice import Lattice
from pipeline.cli.lmbr import main
from tests.lattices.conftest import bpe_files  # noqa: F401 (fixture)
from tests.lattices.helpers import GOLDEN_ARCS, GOLDEN_FINAL, GOLDEN_POSTERIORS, make_fst


def parse(out: str) -> dict[str, float]:
    result = {}
    for line in out.splitlines():
        value, ngram = line.split("\t")
        result[ngram] = float(value)
    return result


def test_integer_lattice_prints_posteriors_by_order(tmp_path, capsys):
    path = tmp_path / "golden.fst"
    make_fst(GOLDEN_ARCS, {GOLDEN_FINAL: 0.0}).write(str(path))
    assert main(["posteriors", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    orders = [len(line.split("\t")[1].split()) for line in lines]
    assert orders == sorted(orders) and set(orders) == {1, 2, 3, 4}
    got = parse("\n".join(lines))
    for ngram, expected in GOLDEN_POSTERIORS.items():
        assert got[" ".join(map(str, ngram))] == pytest.approx(expected, abs=1e-5)


def test_symbols_options_and_alpha_from_lattices_json(tmp_path, capsys):
    table = symbol_table(["Haus", "Hund", "das"])
    w = table.find
    lattice = Lattice.from_fst(make_fst([(0, 1, w("<s>"), 0.0), (1, 2, w("das"), 0.0), (2, 3, w("Haus"), 0.0),
                                         (2, 3, w("Hund"), 1.0), (3, 4, w("</s>"), 0.0)], {4: 0.0}, symbols=table))
    path = tmp_path / "decoded" / "lattices" / "0.fst"
    write_lattice(lattice, path)
    assert main(["posteriors", str(path), "--order", "2"]) == 0
    got = parse(capsys.readouterr().out)
    p_haus = 1 / (1 + 2.718281828459045 ** -1)
    assert got["das Haus"] == pytest.approx(p_haus) and got["<s> das"] == pytest.approx(1.0)
    assert max(len(k.split()) for k in got) == 2
    (tmp_path / "decoded" / "lattices.json").write_text(json.dumps({"alpha": 2.0}))
    assert main(["posteriors", str(path), "--semiring", "log"]) == 0
    assert parse(capsys.readouterr().out)["Haus"] == pytest.approx(1 / (1 + 2.718281828459045 ** -2))
    assert main(["posteriors", str(path), "--alpha", "1", "--nbest", "1"]) == 0
    got = parse(capsys.readouterr().out)
    assert got["Haus"] == pytest.approx(1.0) and "Hund" not in got


def test_bpe_units_with_codes_and_vocab(tmp_path, capsys, bpe_files):
    codes, vocab = bpe_files
    table = symbol_table(["man", "Zyxwvut"])
    w = table.find
    path = tmp_path / "0.fst"
    make_fst([(0, 1, w("<s>"), 0.0), (1, 2, w("Zyxwvut"), 0.0), (2, 3, w("man"), 0.0), (3, 4, w("</s>"), 0.0)],
             {4: 0.0}, symbols=table).write(str(path))
    assert main(["posteriors", str(path), "--order", "1", "--codes", str(codes), "--vocab", str(vocab)]) == 0
    got = parse(capsys.readouterr().out)
    assert {"<s>", "</s>", "man", "<unk>"} <= set(got) and all(v == pytest.approx(1.0) for v in got.values())


def test_errors_exit_2(tmp_path, capsys):
    assert main(["posteriors", str(tmp_path / "missing.fst")]) == 2
    assert "no such lattice file" in capsys.readouterr().err
    path = tmp_path / "0.fst"
    make_fst([(0, 1, 3, 0.0)], {1: 0.0}).write(str(path))
    assert main(["posteriors", str(path), "--codes", "c"]) == 2
    assert "--codes needs --vocab" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["posteriors", str(path), "--alpha", "0"])


def test_a_state_bound_prunes_and_says_so(tmp_path, capsys):
    path = tmp_path / "golden.fst"
    make_fst(GOLDEN_ARCS, {GOLDEN_FINAL: 0.0}).write(str(path))
    assert main(["posteriors", str(path), "--max-states", "0"]) == 0
    whole = capsys.readouterr()
    assert main(["posteriors", str(path), "--max-states", "7"]) == 0
    bounded = capsys.readouterr()
    assert whole.err == "" and "more than 7 states" in bounded.err and "within 0 of the best path" in bounded.err
    assert set(parse(bounded.out)) < set(parse(whole.out))
    assert parse(bounded.out)["933 150 2"] == pytest.approx(1.0)  # the best path alone: every n-gram is certain
