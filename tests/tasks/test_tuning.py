"""TuneLMBR and TuneRescoring as a race (successive halving over the tuning sentences) against the full grid."""
from __future__ import annotations

import dataclasses
import json
import re

from luigi.execution_summary import LuigiStatusCode

from pipeline.config import load_profile
from tasks.tuning import TuneLMBR, TuneRescoring, race_params
from tests.conftest import write_deen_folder
from tests.tasks.helpers import build, shared_params
from tests.tasks.test_decode_tasks import deterministic_configs


def _configs(folder, race: str):
    configs = deterministic_configs(folder)
    profile = configs / "profiles" / "tiny.toml"
    text = re.sub(r"^tune_sentences = 50 .*$", f"tune_sentences = 20\n{race}", profile.read_text(), flags=re.M)
    text = re.sub(r"^grid_lambda = .*$", "grid_lambda = [0.001, 0.05, 1.0]", text, flags=re.M)
    # the tiny tuning set's PBMT precisions are 100%: at p = r = 1 (stage 1) L adds nothing and BLEU is 0; lower p
    # and r (stage 2) let L pull the output towards the lattice, where BLEU tells the points apart
    text = re.sub(r"^grid_p = .*$", "grid_p = [-0.5, -0.4, -0.3, 0.0]", text, flags=re.M)
    text = re.sub(r"^grid_r = .*$", "grid_r = [-0.2, 0.0]", text, flags=re.M)
    text = re.sub(r"^grid_lattice_weight = .*$", "grid_lattice_weight = [0.0, 3.0, 1e5]", text, flags=re.M)
    # one sentence per decoder batch: the race's spans and the full grid then compute the same products, so no
    # near-tie can part them on another CPU (batched products round differently: beam_search.py)
    profile.write_text(re.sub(r"^batch_sentences = .*$", "batch_sentences = 1", text, flags=re.M))
    return configs


def test_a_race_scores_its_finishers_as_the_full_grid_does(tmp_path):
    """Each point that finishes the race decoded the tuning sentences in two spans (the first 8, then the rest),
    with the L and acceptors of the right sentences: its BLEU equals the full grid's. The others stopped after 8."""
    data = tmp_path / "data"
    write_deen_folder(data, eval_sentences=12)
    records = {}
    for name, race in (("full", ""), ("race", "race_sentences = [8]\nrace_keep = 0.5")):
        (tmp_path / name).mkdir()
        params = shared_params(tmp_path, data, config_dir=_configs(tmp_path / name, race))
        lmbr, rescoring = TuneLMBR(models="TNMT", **params), TuneRescoring(models="TNMT", lmbr=True, **params)
        assert build(lmbr, rescoring).status == LuigiStatusCode.SUCCESS
        records[name] = [json.loads((task.artifact_dir() / file).read_text())
                         for task, file in ((lmbr, "lmbr.json"), (rescoring, "rescoring.json"))]
        assert ("race_sentences" in lmbr.params()) == (name == "race")

    def key(point):
        return tuple(sorted((k, v) for k, v in point.items() if k not in ("bleu", "eliminated_at")))

    for full, race in zip(records["full"], records["race"]):
        finished = [point for point in race["grid"] if "eliminated_at" not in point]
        stopped = [point for point in race["grid"] if "eliminated_at" in point]
        assert finished and stopped and all(point["eliminated_at"] == 8 for point in stopped)
        full_bleu = {key(point): point["bleu"] for point in full["grid"]}
        for point in finished:
            if key(point) in full_bleu:  # stage 2 of TuneLMBR may start from another point than the full grid's
                assert point["bleu"] == full_bleu[key(point)], point
    # stage 1 of TuneLMBR is the same grid in both: 3 lambdas x 2 gain forms, 3 of them finish (ceil(6 / 2)); stage
    # 2 tries 7 offsets of p and r, 4 finish, with BLEU that a wrong sentence's L would change
    lmbr_race, lmbr_full = records["race"][0]["grid"], records["full"][0]["grid"]
    assert [key(p) for p in lmbr_race[:6]] == [key(p) for p in lmbr_full[:6]]
    assert sum("eliminated_at" not in p for p in lmbr_race[:6]) == 3 and len(lmbr_race) == 6 + 7
    assert sum("eliminated_at" not in p for p in lmbr_race[6:]) == 4
    assert len({p["bleu"] for p in lmbr_full[6:]}) > 1 and min(p["bleu"] for p in lmbr_race[6:]
                                                              if "eliminated_at" not in p) > 20


def test_finalists_enter_the_tuning_hash_only_above_one():
    """race_finalists = 1 is the race of before: its tuning artifacts keep their ids; 4 is another race."""
    lmbr = load_profile("medium").lmbr
    one, four = dataclasses.replace(lmbr, race_finalists=1), dataclasses.replace(lmbr, race_finalists=4)
    assert race_params(one) == {"race_sentences": (25, 50), "race_keep": 0.3333}
    assert race_params(four) == {**race_params(one), "race_finalists": 4}
    assert race_params(dataclasses.replace(four, race_sentences=())) == {}
