"""The tuning window ([lmbr] tune_start): every tuning stage decodes sentences tune_start .. + tune_sentences of the
tuning split, with the L matrices, acceptors and words of those sentences."""
from __future__ import annotations

import json
import re

from luigi.execution_summary import LuigiStatusCode

from tasks.mbr import TuneMBR
from tasks.tuning import TuneLMBR, TuneRescoring, TuneSearch
from tests.conftest import sentence_pairs, write_deen_folder, write_pair
from tests.tasks.helpers import build, shared_params
from tests.tasks.test_tuning import _configs


def test_a_window_of_repeated_sentences_tunes_as_the_first_window_does(tmp_path):
    """The tuning split is 20 sentences twice over: the window 20..40 must score every grid point of every tuning
    stage exactly as the window 0..20 does (a sentence read with another sentence's L, acceptor or lattice words
    would change a BLEU), while its artifacts are others; tune_start 0 leaves the ids of before."""
    data = tmp_path / "data"
    write_deen_folder(data, eval_sentences=12)
    write_pair(data, "dev", sentence_pairs(20, seed=2) * 2)
    records, ids = {}, {}
    for name, start in (("first", 0), ("second", 20)):
        (tmp_path / name).mkdir()
        configs = _configs(tmp_path / name, "")
        profile = configs / "profiles" / "tiny.toml"
        profile.write_text(re.sub(r"^tune_sentences = 20$",
                                  f'tune_sentences = 20\ntune_start = {start}\ngrid_search = ["free", "anchored"]',
                                  profile.read_text(), flags=re.M))
        params = shared_params(tmp_path, data, config_dir=configs)
        tasks = {"lmbr.json": TuneLMBR(models="TNMT", **params),
                 "rescoring.json": TuneRescoring(models="TNMT", lmbr=True, **params),
                 "search.json": TuneSearch(models="TNMT", **params), "mbr.json": TuneMBR(**params)}
        assert build(*tasks.values()).status == LuigiStatusCode.SUCCESS
        records[name] = {file: json.loads((task.artifact_dir() / file).read_text()) for file, task in tasks.items()}
        ids[name] = {file: task.artifact_dir().name for file, task in tasks.items()}
        assert all(("tune_start" in task.params()) == bool(start) for task in tasks.values())
    assert all(ids["first"][file] != ids["second"][file] for file in ids["first"])
    for file, first in records["first"].items():
        second = records["second"][file]
        assert "window" not in first and second.pop("window") == [20, 40], file
        assert first == second, file
