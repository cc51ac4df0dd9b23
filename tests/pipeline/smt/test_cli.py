import json

import pynini

from pipeline.cli.lmbr import main
from pipeline.io import read_lines
from pipeline.smt.features import Weights
from pipeline.smt.lattice import parse_nbest, paths
from pipeline.smt.weights import save_weights
from tests.conftest import write_gz
from tests.pipeline.smt.conftest import random_sentence, random_table


def test_pbmt_command_writes_best_nbest_and_lattices(tmp_path, lm_path, capsys):
    random_table(6).save(tmp_path / "table.npz")
    save_weights(tmp_path / "w.json", Weights.default(), {"method": "defaults"})
    sentences = [" ".join(random_sentence(k, 4)) for k in range(5)] + [""]
    write_gz(tmp_path / "in.gz", sentences)
    assert main(["pbmt", str(tmp_path / "in.gz"), "--table", str(tmp_path / "table.npz"), "--lm", str(lm_path),
                 "--weights", str(tmp_path / "w.json"), "--output", str(tmp_path / "best.txt"), "--nbest", "4",
                 "--nbest-output", str(tmp_path / "nbest.txt"), "--lattices", str(tmp_path / "lat"),
                 "--workers", "2", "--stack-limit", "20", "--stats"]) == 0
    best = list(read_lines(tmp_path / "best.txt"))
    assert len(best) == 6 and best[-1] == "" and all(best[:5])
    nbest = parse_nbest(read_lines(tmp_path / "nbest.txt"))
    assert sorted(nbest) == list(range(6)) and all(1 <= len(h) <= 4 for h in nbest.values())
    meta = json.loads((tmp_path / "lat" / "lattices.json").read_text())
    assert meta["sentences"] == 6 and meta["alpha"] == 1.0
    fst = pynini.Fst.read(str(tmp_path / "lat" / "lattices" / "0.fst"))
    assert " ".join(paths(pynini.shortestpath(fst))[0][0]) == best[0]
    stats = json.loads(capsys.readouterr().err.strip().splitlines()[-1])
    assert stats["source_words"] == 20 and stats["words_per_minute"] > 0


def test_pbmt_command_errors(tmp_path, lm_path, capsys):
    write_gz(tmp_path / "in.gz", ["s0"])
    assert main(["pbmt", str(tmp_path / "in.gz"), "--table", str(tmp_path / "none.npz"), "--lm", str(lm_path)]) == 2
    assert "none.npz: no such phrase table" in capsys.readouterr().err
    assert main(["pbmt", str(tmp_path / "in.gz"), "--table", "x", "--lm", "y", "--nbest-output", "n"]) == 2
